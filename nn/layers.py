"""Layers: Linear, Embedding, LayerNorm, RMSNorm, Dropout, Identity (activations: activation.py).

Each holds its parameters, initialises them as PyTorch does, and calls the functional form.
"""
import math

import tensorgrad as tg

from . import functional as F
from . import init
from .module import Module, Parameter


def _where(module):
    """How an error names a module: its path in the model being called, else its class."""
    return f"{type(module).__name__} '{module._path}'" if module._path else type(module).__name__


class Identity(Module):
    """Returns its input unchanged (a placeholder that keeps state_dict keys stable)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ W.T + b. x: (*, in_features) -> (*, out_features).

    W: (out_features, in_features) ~ kaiming_uniform(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in));
    b: (out_features,) ~ U(-1/sqrt(in), 1/sqrt(in)). PyTorch's defaults, so a model initialised
    here trains like its PyTorch twin.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(tg.empty(out_features, in_features, device=device, dtype=dtype))
        self.bias = Parameter(tg.empty(out_features, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"{_where(self)}: expected input of shape (*, {self.in_features}), "
                             f"got {x.shape}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table: integer ids (*) -> rows (*, embedding_dim). Weights ~ N(0, 1); the row at
    padding_idx starts at zero and receives no gradient."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for "
                                 f"{num_embeddings} embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(tg.empty(num_embeddings, embedding_dim, device=device,
                                         dtype=dtype))
        self.reset_parameters()

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None):
        """An Embedding holding a copy of the (num_embeddings, embedding_dim) tensor, frozen
        (requires_grad=False) unless freeze=False."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: expected a 2-D tensor, got shape "
                             f"{tuple(embeddings.shape)}")
        module = cls(*embeddings.shape, padding_idx=padding_idx, device=embeddings.device,
                     dtype=embeddings.dtype)
        with tg.no_grad():
            module.weight.copy_(embeddings)
        module.weight.requires_grad_(not freeze)
        return module

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tg.no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


def _as_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing `normalized_shape` dims to zero mean and unit variance, then
    scale by weight (ones) and shift by bias (zeros). x: (*, *normalized_shape) -> same."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = _as_shape(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = Parameter(tg.ones(*self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(tg.zeros(*self.normalized_shape, device=device,
                                               dtype=dtype))

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (Zhang & Sennrich, 2019): no
    centring, no bias. eps=None takes the dtype's machine epsilon, as torch.nn.RMSNorm does."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = _as_shape(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        self.weight = None
        if elementwise_affine:
            self.weight = Parameter(tg.ones(*self.normalized_shape, device=device, dtype=dtype))

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class Dropout(Module):
    """Zero each element with probability p in training mode (scaling the rest by 1/(1-p));
    the identity in eval mode."""

    def __init__(self, p=0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def __call__(self, *args, **kwargs):
        # The identity (eval mode or p = 0) with no hooks to run records nothing and names
        # nothing: skip entering the module (13 of the 53 module calls per GPT-mini token:
        # generate).
        if len(args) == 1 and not kwargs and not (self.training and self.p) \
                and not self._forward_hooks and type(self).forward is Dropout.forward:
            return args[0]  # (a subclass with its own forward is called as usual)
        return super().__call__(*args, **kwargs)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"
