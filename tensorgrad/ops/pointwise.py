"""PyTorch's elementwise conveniences, as composites of the arithmetic, selection and unary ops:
clamp_min/clamp_max, addcmul/addcdiv, logit, nan_to_num, float_power, sgn, and the two that
have no gradient, signbit and heaviside (with their in-place `_` forms where torch has them)."""
from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .compare import isnan
from .operands import binary_operands, require_float
from .select import clamp, where
from .unary import inplace_form, log, sign


@tensor_method
def clamp_min(input, min):
    """clamp(input, min=min): a number or a tensor that broadcasts."""
    return clamp(input, min=min)


@tensor_method
def clamp_max(input, max):
    """clamp(input, max=max): a number or a tensor that broadcasts."""
    return clamp(input, max=max)


@tensor_method
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, all three broadcast."""
    product = tensor1 * tensor2
    return input + (product if value == 1 else product * value)


@tensor_method
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (true division; integer tensor1 and tensor2 are refused
    as in PyTorch, which once floor-divided them)."""
    for t in (tensor1, tensor2):
        if isinstance(t, Tensor) and t.dtype.kind != "f":
            raise RuntimeError(f"addcdiv: integer division of tensors is not supported; got "
                               f"{tensor1.dtype} / {tensor2.dtype}, convert to a float dtype")
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else quotient * value)


@tensor_method
def logit(input, eps=None):
    """log(p / (1 - p)); with eps, p is clamped to [eps, 1 - eps] first (gradient 0 outside)."""
    require_float(input, "logit")
    p = input if eps is None else clamp(input, eps, 1.0 - eps)
    return log(p / (1.0 - p))


@tensor_method
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf, -inf -> neginf (by default the dtype's largest and lowest
    finite values); the gradient passes where the input was finite. Integers pass unchanged."""
    if input.dtype.kind != "f":
        return input.clone()
    info = input._backend.finfo(input.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = where(isnan(input), nan, input)
    out = where(input == float("inf"), posinf, out)
    return where(input == float("-inf"), neginf, out)


@tensor_method
def float_power(input, exponent):
    """input ** exponent computed in float64 (torch's double-precision power): the result is
    float64 whatever the inputs' dtypes."""
    base = input.double() if isinstance(input, Tensor) else float(input)
    power = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return base ** power


sgn = tensor_method(sign, "sgn")  # sign for real tensors (torch's sgn extends it to complex)


@primitive("signbit", differentiable=False)
def _signbit(xp, x):
    return xp.signbit(x)


@tensor_method
def signbit(input):
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the sign bit."""
    return _signbit(input)


@primitive("heaviside", differentiable=False)
def _heaviside(xp, input, values):
    return xp.where(input == 0, values, (input > 0).astype(input.dtype)).astype(input.dtype)


@tensor_method
def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0. Both tensors must have one
    dtype (as in PyTorch). No gradient: PyTorch does not define one either (its backward
    raises; here the result simply does not require grad)."""
    if not isinstance(values, Tensor) or not isinstance(input, Tensor):
        raise TypeError(f"heaviside: expected two Tensors, got {type(input).__name__} and "
                        f"{type(values).__name__}")
    if input.dtype != values.dtype:
        raise RuntimeError(f"heaviside: expected input and values of one dtype, got "
                           f"{input.dtype} and {values.dtype}")
    return _heaviside(*binary_operands(input, values))


for _op, _name in ((clamp_min, "clamp_min_"), (clamp_max, "clamp_max_"), (addcmul, "addcmul_"),
                  (addcdiv, "addcdiv_"), (logit, "logit_"), (nan_to_num, "nan_to_num_"),
                  (sgn, "sgn_"), (heaviside, "heaviside_")):
    inplace_form(_op, _name)
