"""A 3x3 convolution forward + backward (input, weight and bias gradients): x (32, 3, 32, 32),
weight (64, 3, 3, 3), padding 1, the first layer of a small CIFAR-sized CNN. tensorgrad's
im2col + GEMM primitive against PyTorch's CPU convolution; the output gradient is a fixed
random tensor, so both sides run exactly one forward and one backward."""
from . import row
from ..timing import scale

FRAMEWORKS = ("tensorgrad", "torch")
DESCRIPTION = "ms per conv2d forward + backward, (32,3,32,32) * (64,3,3,3), padding 1"
SIZES = {"full": ((32, 3, 32, 32), (64, 3, 3, 3)), "quick": ((32, 3, 32, 32), (64, 3, 3, 3)),
         "tiny": ((2, 3, 8, 8), (4, 3, 3, 3))}


def run(env):
    x_shape, w_shape = SIZES[env.mode]
    x = env.randn(*x_shape, requires_grad=True)
    weight, bias = env.randn(*w_shape, requires_grad=True), env.randn(w_shape[0],
                                                                       requires_grad=True)
    grad = env.randn(x_shape[0], w_shape[0], *x_shape[2:])
    if env.framework == "torch":
        from torch.nn.functional import conv2d
    else:
        from tensorgrad.nn.functional import conv2d

    def step():
        for t in (x, weight, bias):
            t.grad = None
        conv2d(x, weight, bias, padding=1).backward(grad)
    case = f"x={'x'.join(map(str, x_shape))} w={'x'.join(map(str, w_shape))}"
    return [row(case, "ms fwd+bwd", scale(env.measure(step), 1e3))]
