"""The NumPy floor: the benchmark models written by hand in plain array code, with hand-derived
gradients and in-place optimizers.

What a framework on top of NumPy cannot beat without leaving NumPy: no graph, no Tensor objects,
no dispatch, every gradient derived on paper. tensorgrad's target is to match it (gpt_step) —
possible because a framework can fuse or skip work that this straightforward code does not.

Everything is float32 (the dtype is a parameter only so the tests can check the gradients in
float64) and written against `xp`, the array module, so the same code runs on CuPy for
`--device cuda`. Parameters are named and shaped as in PyTorch (a Linear weight is
(out_features, in_features)), so a torch model's state_dict loads as is; they live as views into
one flat buffer (and their gradients into another), which makes an optimizer step a handful of
whole-buffer operations instead of a loop over tensors.
"""
import math

import numpy

GELU_K = math.sqrt(2.0 / math.pi)  # tanh-GELU: 0.5 x (1 + tanh(GELU_K (x + GELU_A x^3)))
GELU_A = 0.044715


class FlatParams:
    """Named parameters and gradients as views into two flat buffers (one allocation each)."""

    def __init__(self, shapes, xp=numpy, dtype=numpy.float32):
        self.xp = xp
        total = sum(math.prod(shape) for shape in shapes.values())
        self.flat = xp.zeros(total, dtype=dtype)
        self.grad_flat = xp.zeros(total, dtype=dtype)
        self.params, self.grads = {}, {}
        offset = 0
        for name, shape in shapes.items():
            size = math.prod(shape)
            self.params[name] = self.flat[offset:offset + size].reshape(shape)
            self.grads[name] = self.grad_flat[offset:offset + size].reshape(shape)
            offset += size

    def load(self, arrays):
        """Copy host arrays {name: array} into the parameters (shapes must match)."""
        for name, param in self.params.items():
            param[...] = self.xp.asarray(arrays[name], dtype=param.dtype).reshape(param.shape)


class SGD:
    """p <- p - lr * grad over the whole flat buffer."""

    def __init__(self, params, lr=0.01):
        self.params, self.lr = params, lr
        self.scratch = params.xp.empty_like(params.flat)

    def step(self):
        xp, p = self.params.xp, self.params
        xp.multiply(p.grad_flat, self.lr, out=self.scratch)
        p.flat -= self.scratch


class AdamW:
    """PyTorch's AdamW over the whole flat buffer, in place:
        p <- p (1 - lr wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
        p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)"""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        xp = params.xp
        self.params, self.lr, self.betas, self.eps, self.wd = params, lr, betas, eps, weight_decay
        self.m = xp.zeros_like(params.flat)
        self.v = xp.zeros_like(params.flat)
        self.scratch = xp.empty_like(params.flat)
        self.t = 0

    def step(self):
        xp, p, g, m, v, s = (self.params.xp, self.params.flat, self.params.grad_flat, self.m,
                             self.v, self.scratch)
        (b1, b2), lr = self.betas, self.lr
        self.t += 1
        p *= 1.0 - lr * self.wd
        m *= b1
        xp.multiply(g, 1.0 - b1, out=s)
        m += s
        v *= b2
        xp.multiply(g, g, out=s)
        s *= 1.0 - b2
        v += s
        xp.sqrt(v, out=s)
        s *= 1.0 / math.sqrt(1.0 - b2 ** self.t)
        s += self.eps
        xp.divide(m, s, out=s)
        s *= lr / (1.0 - b1 ** self.t)
        p -= s


# ---- building blocks: forward returns what the backward needs -----------------------------------
def cross_entropy(logits, targets, xp):
    """Mean softmax cross-entropy of logits (N, V) against class ids (N,).

    Returns (loss, dlogits); the softmax is computed in place, so `logits` becomes dlogits.
    """
    n = logits.shape[0]
    rows = xp.arange(n)
    logits -= logits.max(axis=1, keepdims=True)
    picked = logits[rows, targets]  # a copy: fancy indexing
    xp.exp(logits, out=logits)
    sums = logits.sum(axis=1)
    loss = float((xp.log(sums) - picked).mean())
    logits /= sums[:, None]  # probabilities
    logits[rows, targets] -= 1.0
    logits *= 1.0 / n
    return loss, logits


def layer_norm(x, weight, bias, eps=1e-5):
    """x (N, C) -> (y, (xhat, rstd)) normalised over C."""
    xhat = x - x.mean(axis=1, keepdims=True)
    var = (xhat * xhat).mean(axis=1, keepdims=True)
    rstd = (var + eps) ** -0.5
    xhat *= rstd
    y = xhat * weight
    y += bias
    return y, (xhat, rstd)


def layer_norm_backward(dy, saved, weight, gweight, gbias):
    """dx for layer_norm, writing dweight and dbias into gweight and gbias:
    dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy * weight."""
    xhat, rstd = saved
    (dy * xhat).sum(axis=0, out=gweight)
    dy.sum(axis=0, out=gbias)
    dxhat = dy * weight
    dx = dxhat - dxhat.mean(axis=1, keepdims=True)
    dxhat *= xhat
    dx -= xhat * dxhat.mean(axis=1, keepdims=True)
    dx *= rstd
    return dx


def linear(x, weight, bias):
    """x (N, in) @ weight.T (in, out) + bias."""
    y = x @ weight.T
    y += bias
    return y


def linear_backward(dy, x, weight, gweight, gbias, xp):
    """Write dweight = dy.T x and dbias = sum(dy) into gweight, gbias; return dx = dy weight."""
    xp.matmul(dy.T, x, out=gweight)
    dy.sum(axis=0, out=gbias)
    return dy @ weight


# ---- the MLP ----------------------------------------------------------------------------------
class MLP:
    """sizes[0] -> ... -> sizes[-1] with ReLU between, softmax cross-entropy, SGD.

    Parameters `layers.{i}.weight` (out, in) and `layers.{i}.bias`, initialised as PyTorch's
    Linear: U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(self, sizes=(784, 512, 512, 10), lr=0.01, xp=numpy, dtype=numpy.float32,
                 seed=0):
        self.xp, self.n = xp, len(sizes) - 1
        shapes, init = {}, {}
        rng = numpy.random.default_rng(seed)
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            shapes[f"layers.{i}.weight"] = (fan_out, fan_in)
            shapes[f"layers.{i}.bias"] = (fan_out,)
            bound = 1.0 / math.sqrt(fan_in)
            init[f"layers.{i}.weight"] = rng.uniform(-bound, bound, (fan_out, fan_in))
            init[f"layers.{i}.bias"] = rng.uniform(-bound, bound, fan_out)
        self.state = FlatParams(shapes, xp, dtype)
        self.state.load(init)
        self.optimizer = SGD(self.state, lr=lr)

    def loss_and_grads(self, x, targets):
        """Forward and backward; gradients land in self.state.grads. x (N, in), targets (N,)."""
        xp, P, G = self.xp, self.state.params, self.state.grads
        inputs = []
        h = x
        for i in range(self.n):
            inputs.append(h)
            h = linear(h, P[f"layers.{i}.weight"], P[f"layers.{i}.bias"])
            if i < self.n - 1:
                xp.maximum(h, 0.0, out=h)  # ReLU in place: its backward reads the output
        loss, d = cross_entropy(h, targets, xp)
        for i in reversed(range(self.n)):
            if i < self.n - 1:
                d *= inputs[i + 1] > 0  # ReLU backward: the layer's output is the next input
            d = linear_backward(d, inputs[i], P[f"layers.{i}.weight"], G[f"layers.{i}.weight"],
                                G[f"layers.{i}.bias"], xp)
        return loss

    def step(self, x, targets):
        loss = self.loss_and_grads(x, targets)
        self.optimizer.step()
        return loss


# ---- GPT-mini ---------------------------------------------------------------------------------
def gpt_shapes(vocab_size, block_size, n_layer, n_embd, d_ff):
    """Parameter names and shapes of GPT-mini, as in benchmarks/torch_gpt.py (nanoGPT's layout,
    biases everywhere, the output head tied to wte)."""
    c = n_embd
    shapes = {"wte.weight": (vocab_size, c), "wpe.weight": (block_size, c)}
    for i in range(n_layer):
        shapes.update({
            f"h.{i}.ln_1.weight": (c,), f"h.{i}.ln_1.bias": (c,),
            f"h.{i}.attn.c_attn.weight": (3 * c, c), f"h.{i}.attn.c_attn.bias": (3 * c,),
            f"h.{i}.attn.c_proj.weight": (c, c), f"h.{i}.attn.c_proj.bias": (c,),
            f"h.{i}.ln_2.weight": (c,), f"h.{i}.ln_2.bias": (c,),
            f"h.{i}.mlp.c_fc.weight": (d_ff, c), f"h.{i}.mlp.c_fc.bias": (d_ff,),
            f"h.{i}.mlp.c_proj.weight": (c, d_ff), f"h.{i}.mlp.c_proj.bias": (c,),
        })
    shapes.update({"ln_f.weight": (c,), "ln_f.bias": (c,)})
    return shapes


class GPT:
    """GPT-mini: learned positions, pre-LN blocks of causal multi-head attention and a tanh-GELU
    MLP, final LayerNorm, output head tied to the token embedding, mean cross-entropy, AdamW.

    Initialised as nanoGPT (N(0, 0.02) weights, zero biases, unit LayerNorm gains); load a torch
    model's state_dict with `self.state.load` to compare.
    """

    def __init__(self, vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=128, d_ff=512,
                 lr=1e-3, weight_decay=0.01, xp=numpy, dtype=numpy.float32, seed=0):
        self.xp, self.n_layer, self.n_head, self.n_embd = xp, n_layer, n_head, n_embd
        shapes = gpt_shapes(vocab_size, block_size, n_layer, n_embd, d_ff)
        self.state = FlatParams(shapes, xp, dtype)
        rng = numpy.random.default_rng(seed)
        self.state.load({name: (numpy.ones(shape) if name.endswith(("ln_1.weight", "ln_2.weight",
                                                                      "ln_f.weight"))
                                else numpy.zeros(shape) if name.endswith("bias")
                                else rng.normal(0.0, 0.02, shape))
                         for name, shape in shapes.items()})
        self.optimizer = AdamW(self.state, lr=lr, weight_decay=weight_decay)
        self._masks = {}

    def _causal_mask(self, t, dtype):
        """(t, t) additive mask: 0 on and below the diagonal, -inf above (cached per length)."""
        if t not in self._masks:
            xp = self.xp
            self._masks[t] = xp.triu(xp.full((t, t), -xp.inf, dtype=dtype), k=1)
        return self._masks[t]

    def loss_and_grads(self, idx, targets):
        """Forward and backward of mean cross-entropy; gradients land in self.state.grads.

        idx, targets: integer arrays (B, T). Returns the loss as a float.
        """
        xp, P, G = self.xp, self.state.params, self.state.grads
        B, T = idx.shape
        C, H = self.n_embd, self.n_head
        hs, N = C // H, B * T
        scale = 1.0 / math.sqrt(hs)
        ids = idx.reshape(N)

        x = P["wte.weight"][ids]  # (N, C), a copy (fancy indexing) we may update in place
        x.reshape(B, T, C)[...] += P["wpe.weight"][:T]
        saved = []
        for i in range(self.n_layer):
            p = f"h.{i}."
            h, ln1 = layer_norm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"])
            qkv = linear(h, P[p + "attn.c_attn.weight"], P[p + "attn.c_attn.bias"])  # (N, 3C)
            qkv = qkv.reshape(B, T, 3, H, hs).transpose(2, 0, 3, 1, 4)  # (3, B, H, T, hs)
            q, k, v = (xp.ascontiguousarray(qkv[j]) for j in range(3))  # each (B, H, T, hs)
            att = q @ k.transpose(0, 1, 3, 2)  # (B, H, T, T)
            att *= scale
            att += self._causal_mask(T, att.dtype)
            att -= att.max(axis=-1, keepdims=True)
            xp.exp(att, out=att)
            att /= att.sum(axis=-1, keepdims=True)
            y = (att @ v).transpose(0, 2, 1, 3).reshape(N, C)  # (B, H, T, hs) -> (N, C)
            x += linear(y, P[p + "attn.c_proj.weight"], P[p + "attn.c_proj.bias"])
            h2, ln2 = layer_norm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"])
            f = linear(h2, P[p + "mlp.c_fc.weight"], P[p + "mlp.c_fc.bias"])  # (N, d_ff)
            t = f * f  # t = tanh(f (K + K A f^2)), computed in one buffer
            t *= GELU_K * GELU_A
            t += GELU_K
            t *= f
            xp.tanh(t, out=t)
            g = t + 1.0
            g *= f
            g *= 0.5
            x += linear(g, P[p + "mlp.c_proj.weight"], P[p + "mlp.c_proj.bias"])
            saved.append((h, ln1, q, k, v, att, y, h2, ln2, f, t, g))
        xf, lnf = layer_norm(x, P["ln_f.weight"], P["ln_f.bias"])
        logits = xf @ P["wte.weight"].T  # (N, V), tied head
        loss, dlogits = cross_entropy(logits, targets.reshape(N), xp)

        xp.matmul(dlogits.T, xf, out=G["wte.weight"])  # the head's share of wte's gradient
        dx = layer_norm_backward(dlogits @ P["wte.weight"], lnf, P["ln_f.weight"],
                                 G["ln_f.weight"], G["ln_f.bias"])
        for i in reversed(range(self.n_layer)):
            p = f"h.{i}."
            h, ln1, q, k, v, att, y, h2, ln2, f, t, g = saved.pop()
            # MLP branch: x += c_proj(gelu(c_fc(ln_2(x))))
            dg = linear_backward(dx, g, P[p + "mlp.c_proj.weight"], G[p + "mlp.c_proj.weight"],
                                 G[p + "mlp.c_proj.bias"], xp)
            # d gelu/df = 0.5 (1 + t + (1 - t^2) f (K + 3 K A f^2))
            slope = f * f
            slope *= 3.0 * GELU_K * GELU_A
            slope += GELU_K
            slope *= f
            df = t * t
            xp.subtract(1.0, df, out=df)
            df *= slope
            df += t
            df += 1.0
            df *= 0.5
            df *= dg
            dh2 = linear_backward(df, h2, P[p + "mlp.c_fc.weight"], G[p + "mlp.c_fc.weight"],
                                  G[p + "mlp.c_fc.bias"], xp)
            dx += layer_norm_backward(dh2, ln2, P[p + "ln_2.weight"], G[p + "ln_2.weight"],
                                      G[p + "ln_2.bias"])
            # attention branch: x += c_proj(softmax(q k^T * scale + mask) v)
            dy = linear_backward(dx, y, P[p + "attn.c_proj.weight"], G[p + "attn.c_proj.weight"],
                                 G[p + "attn.c_proj.bias"], xp)
            dy = xp.ascontiguousarray(dy.reshape(B, T, H, hs).transpose(0, 2, 1, 3))  # (B,H,T,hs)
            datt = dy @ v.transpose(0, 1, 3, 2)  # (B, H, T, T)
            dv = att.transpose(0, 1, 3, 2) @ dy
            # softmax backward: ds = att * (datt - sum(datt * att)); masked entries have att = 0
            datt -= (datt * att).sum(axis=-1, keepdims=True)
            datt *= att
            datt *= scale
            dqkv = xp.empty((B, T, 3, H, hs), dtype=x.dtype)
            dqkv[:, :, 0] = (datt @ k).transpose(0, 2, 1, 3)
            dqkv[:, :, 1] = (datt.transpose(0, 1, 3, 2) @ q).transpose(0, 2, 1, 3)
            dqkv[:, :, 2] = dv.transpose(0, 2, 1, 3)
            dh = linear_backward(dqkv.reshape(N, 3 * C), h, P[p + "attn.c_attn.weight"],
                                 G[p + "attn.c_attn.weight"], G[p + "attn.c_attn.bias"], xp)
            dx += layer_norm_backward(dh, ln1, P[p + "ln_1.weight"], G[p + "ln_1.weight"],
                                      G[p + "ln_1.bias"])
        G["wpe.weight"][...] = 0.0
        dx.reshape(B, T, C).sum(axis=0, out=G["wpe.weight"][:T])
        # the embedding's share: scatter-add rows of dx, as a (V, N) one-hot matmul (V is small)
        onehot = (xp.arange(P["wte.weight"].shape[0])[:, None] == ids[None, :]).astype(x.dtype)
        G["wte.weight"] += onehot @ dx
        return loss

    def step(self, idx, targets):
        loss = self.loss_and_grads(idx, targets)
        self.optimizer.step()
        return loss
