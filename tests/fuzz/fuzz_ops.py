"""The table of ops the graph fuzzer draws from: one `Op` per way of using an operation.

An entry is a template of Python source that reads the same in both frameworks: `T` is the
framework (tensorgrad or torch), `F` its functional module, `{0}`, `{1}`, ... the operands and
`{name}` a drawn parameter (written with repr, or as raw source for a `Code`). A failing example
therefore prints as a program that runs unchanged against either framework.

Adding an op is one entry:
- `accepts(shape)`: which values can be the first operand (e.g. ndim >= 2);
- `arity` and `partner(chosen_shapes, shape)`: how many operands and which values fit next to
  the ones already chosen (default: broadcastable with them);
- `params(draw, *shapes)`: a dict of the op's arguments drawn from the operand shapes;
- `smooth(operands, out, params)`: False where the op is not differentiable (a kink, a tie) or
  badly conditioned, evaluated on the actual torch values; the fuzzer then draws another op.
An op that needs a domain (log, sqrt, a divisor) is written on a guarded operand,
`({0} * {0} + 0.5)`, so every value it sees is inside it. The helpers for all four live in
fuzz_params.py, with the flags that fence off mismatches found and not yet fixed.
"""
import math
from dataclasses import dataclass
from typing import Callable

from hypothesis import strategies as st

from fuzz_params import (
    away_from, apart, basic_index, bool_mask, broadcastable, cat_fits,
    choice, clamp_smooth, cross_entropy_params, dim_keepdim, dim_param, einsum_params,
    expand_shape, factor_shape, flatten_params, gather_params, matmul_fits,
    narrow_params, ndim_at_least, no_ties, norm_shape, one_dim, operand_away,
    out_away_from_zero, pad_params, permutation, pieces_param, reduction, same_shape,
    scatter_params, sdpa_fits, some_dims, spread_params, tensor_index, unbind_params,
    weight_fits, jumps_away, quotient, ndim_is, conv_fits, conv_params, transpose_weight_fits,
    unfold_params,
)


@dataclass(frozen=True)
class Op:
    name: str
    expr: str
    arity: int = 1
    accepts: Callable = lambda shape: True
    partner: Callable = None  # default: broadcastable with every operand chosen so far
    params: Callable = lambda draw, *shapes: {}
    smooth: Callable = None

    def fits(self, chosen, shape):
        if self.partner is None:
            return broadcastable(*chosen, shape)
        return self.partner(chosen, shape)

    def render(self, operands, params):
        return self.expr.format(*operands, **{k: repr(v) for k, v in params.items()})



GUARD = "({0} * {0} + 0.5)"  # a positive version of operand 0, for ops with a domain
SCALARS = [-1.5, 0.5, 2.0]
DIAGONALS = [-1, 0, 1]
DIVISOR = "({1} * {1} + 0.5)"  # a positive version of operand 1, for the rounding divisions
CONV_ARGS = "stride={stride}, padding={padding}, dilation={dilation}"

OPS = [
    # elementwise, one operand
    Op("neg", "-{0}"),
    Op("exp", "{0}.exp()"),
    Op("log", GUARD + ".log()"),
    Op("sqrt", GUARD + ".sqrt()"),
    Op("rsqrt", GUARD + ".rsqrt()"),
    Op("reciprocal", GUARD + ".reciprocal()"),
    Op("tanh", "{0}.tanh()"),
    Op("sigmoid", "{0}.sigmoid()"),
    Op("sin", "{0}.sin()"),
    Op("cos", "{0}.cos()"),
    Op("erf", "{0}.erf()"),
    Op("square", "{0}.square()"),
    Op("abs", "{0}.abs()", smooth=away_from(0.0)),
    Op("relu", "{0}.relu()", smooth=away_from(0.0)),
    Op("gelu", "F.gelu({0}, approximate={approximate})",
       params=choice(approximate=["none", "tanh"])),
    Op("silu", "F.silu({0})"),
    Op("clamp", "{0}.clamp({lo}, {hi})", smooth=clamp_smooth,
       params=lambda draw, s: draw(st.sampled_from(
           [{"lo": -0.5, "hi": 0.7}, {"lo": None, "hi": 0.3}, {"lo": -0.2, "hi": None}]))),
    Op("clone", "{0}.clone()"),
    Op("pow", "{0} ** {p}", params=choice(p=[2, 3])),
    Op("pow", GUARD + " ** {p}", params=choice(p=[0.5, -1.5, 2.5])),
    Op("add", "{0} + {c}", params=choice(c=SCALARS)),
    Op("sub", "{c} - {0}", params=choice(c=SCALARS)),
    Op("mul", "{c} * {0}", params=choice(c=SCALARS)),
    Op("div", "{0} / {c}", params=choice(c=SCALARS)),
    Op("div", "{c} / " + GUARD, params=choice(c=SCALARS)),
    # rounding: piecewise constant, so a zero gradient (PyTorch's too), away from the jumps
    Op("floor", "{0}.floor()", smooth=jumps_away()),
    Op("ceil", "{0}.ceil()", smooth=jumps_away()),
    Op("trunc", "{0}.trunc()", smooth=jumps_away()),
    Op("round", "{0}.round()", smooth=jumps_away(offset=0.5)),
    Op("div_rounded", "T.div({0}, " + DIVISOR + ", rounding_mode={mode})", arity=2,
       smooth=jumps_away(quotient), params=choice(mode=["floor", "trunc"])),
    Op("remainder", "{0} % " + DIVISOR, arity=2, smooth=jumps_away(quotient)),
    Op("fmod", "T.fmod({0}, " + DIVISOR + ")", arity=2, smooth=jumps_away(quotient)),
    # elementwise, broadcasting
    # more unary math (domains kept by squashing the operand: tanh into (-1, 1), GUARD above 0)
    Op("tan", "{0}.tanh().tan()"),
    Op("asin", "({0}.tanh() * 0.9).asin()"),
    Op("acos", "({0}.tanh() * 0.9).acos()"),
    Op("atan", "{0}.atan()"),
    Op("atanh", "({0}.tanh() * 0.9).atanh()"),
    Op("erfinv", "({0}.tanh() * 0.9).erfinv()"),
    Op("sinh", "{0}.sinh()"),
    Op("cosh", "{0}.cosh()"),
    Op("asinh", "{0}.asinh()"),
    Op("acosh", "({0} * {0} + 1.5).acosh()"),
    Op("exp2", "{0}.exp2()"),
    Op("expm1", "{0}.expm1()"),
    Op("log2", GUARD + ".log2()"),
    Op("log10", GUARD + ".log10()"),
    Op("log1p", GUARD + ".log1p()"),
    # two-operand math
    Op("atan2", "T.atan2({0}, {1})", arity=2, smooth=operand_away(1)),
    Op("hypot", "T.hypot({0}, {1})", arity=2, smooth=operand_away(1)),
    Op("copysign", "T.copysign({0}, {1})", arity=2, smooth=away_from(0.0)),
    Op("logaddexp", "T.logaddexp({0}, {1})", arity=2),
    Op("add", "{0} + {1}", arity=2),
    Op("add", "T.add({0}, {1}, alpha={alpha})", arity=2, params=choice(alpha=[2.0, -0.5])),
    Op("sub", "{0} - {1}", arity=2),
    Op("mul", "{0} * {1}", arity=2),
    Op("div", "{0} / ({1} * {1} + 0.5)", arity=2),
    Op("pow", GUARD + " ** {1}", arity=2),
    Op("maximum", "T.maximum({0}, {1})", arity=2, smooth=apart),
    Op("minimum", "T.minimum({0}, {1})", arity=2, smooth=apart),
    Op("where", "T.where({0} > 0, {1}, {2})", arity=3, smooth=away_from(0.0)),
    Op("masked_fill", "{0}.masked_fill({1} > 0, {value})", arity=2, smooth=operand_away(1),
       partner=lambda chosen, s: broadcastable(chosen[0], s) and len(s) <= len(chosen[0])
       and all(m in (1, x) for m, x in zip(reversed(s), reversed(chosen[0]))),
       params=choice(value=[0.0, -2.0])),
    # reductions
    Op("sum", "{0}.sum({args})", params=reduction()),
    Op("mean", "{0}.mean({args})", params=reduction()),
    Op("amax", "{0}.amax({args})", smooth=no_ties,
       params=reduction()),
    Op("amin", "{0}.amin({args})", smooth=no_ties,
       params=reduction()),
    Op("max", "{0}.max()", smooth=no_ties),
    Op("max", "{0}.max(dim={dim}, keepdim={keepdim})[0]",
       smooth=no_ties, params=dim_keepdim),
    Op("min", "{0}.min(dim={dim}, keepdim={keepdim})[0]",
       smooth=no_ties, params=dim_keepdim),
    Op("logsumexp", "{0}.logsumexp({args})",
       params=reduction(required=True)),
    Op("var", "{0}.var({args})", params=spread_params),
    Op("std", "{0}.std({args})", smooth=out_away_from_zero,
       params=spread_params),
    Op("norm", "{0}.norm({args})", smooth=out_away_from_zero, params=reduction(extra="p=2")),
    Op("cumsum", "{0}.cumsum({dim})", params=dim_param),
    Op("cumprod", "{0}.cumprod({dim})", params=dim_param),
    Op("softmax", "{0}.softmax({dim})", params=dim_param),
    Op("softmax", "T.softmax({0}, dim={dim})", params=dim_param),
    Op("log_softmax", "F.log_softmax({0}, dim={dim})", params=dim_param),
    # shapes
    Op("reshape", "{0}.reshape({shape})",
       params=lambda draw, s: {"shape": factor_shape(draw, math.prod(s))}),
    Op("permute", "{0}.permute({perm})", params=permutation),
    Op("transpose", "{0}.transpose({d0}, {d1})",
       params=lambda draw, s: {"d0": one_dim(draw, s), "d1": one_dim(draw, s)}),
    Op("transpose", "{0}.mT", accepts=ndim_at_least(2)),
    Op("unsqueeze", "{0}.unsqueeze({dim})",
       params=lambda draw, s: {"dim": one_dim(draw, s, extra=1)}),
    Op("squeeze", "{0}.squeeze({dim})", params=dim_param),
    Op("squeeze", "{0}.squeeze()"),
    Op("flatten", "{0}.flatten({start}, {end})", accepts=ndim_at_least(1), params=flatten_params),
    Op("expand", "{0}.expand({shape})", params=expand_shape),
    Op("movedim", "{0}.movedim({src}, {dst})",
       params=lambda draw, s: {"src": one_dim(draw, s), "dst": one_dim(draw, s)}),
    Op("narrow", "{0}.narrow({dim}, {start}, {length})", accepts=ndim_at_least(1),
       params=narrow_params),
    Op("repeat", "{0}.repeat({reps})",
       params=lambda draw, s: {"reps": tuple(draw(st.lists(
           st.integers(1, 2), min_size=max(len(s), 1), max_size=len(s) + 1)))}),
    Op("tril", "{0}.tril({diagonal})", accepts=ndim_at_least(2), params=choice(diagonal=DIAGONALS)),
    Op("triu", "{0}.triu({diagonal})", accepts=ndim_at_least(2), params=choice(diagonal=DIAGONALS)),
    Op("flip", "{0}.flip({dims})",
       params=lambda draw, s: {"dims": some_dims(draw, s) if s else (0,)}),
    Op("cat", "T.cat([{0}, {1}], dim={dim})", arity=2, partner=cat_fits,
       params=lambda draw, a, b: {"dim": next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                                              one_dim(draw, a))}),
    Op("stack", "T.stack([{0}, {1}], dim={dim})", arity=2, partner=same_shape,
       params=lambda draw, a, b: {"dim": one_dim(draw, a, extra=1)}),
    Op("split", "{0}.split({n}, dim={dim})[{k}]", accepts=ndim_at_least(1),
       params=lambda draw, s: pieces_param(draw, s, "split")),
    Op("chunk", "{0}.chunk({n}, dim={dim})[{k}]", accepts=ndim_at_least(1),
       params=lambda draw, s: pieces_param(draw, s, "chunk")),
    Op("unbind", "{0}.unbind({dim})[{k}]", accepts=ndim_at_least(1), params=unbind_params),
    Op("pad", "F.pad({0}, {pad}, value={value})", accepts=ndim_at_least(1), params=pad_params),
    # indexing
    Op("getitem", "{0}[{index}]", params=basic_index),
    Op("getitem", "{0}[{index}]", accepts=ndim_at_least(1), params=tensor_index),
    Op("getitem", "{0}[{mask}]", accepts=ndim_at_least(1), params=bool_mask),
    Op("getitem", "{0}[{0} > 0]", accepts=ndim_at_least(1), smooth=away_from(0.0)),
    Op("gather", "{0}.gather({dim}, {index})", accepts=ndim_at_least(1), params=gather_params),
    Op("scatter_add", "{0}.scatter_add({dim}, {index}, {1})", arity=2, accepts=ndim_at_least(1),
       partner=same_shape, params=scatter_params),
    Op("scatter_prod", "{0}.scatter_reduce({dim}, {index}, {1}, 'prod')", arity=2,
       accepts=ndim_at_least(1), partner=same_shape, params=scatter_params),
    # linear algebra
    Op("matmul", "{0} @ {1}", arity=2, partner=matmul_fits),
    Op("matmul", "{0} @ {0}.mT", accepts=ndim_at_least(2)),
    Op("linear", "F.linear({0}, {1})", arity=2, accepts=ndim_at_least(1),
       partner=lambda chosen, s: len(s) == 2 and s[1] == chosen[0][-1]),
    Op("linear", "F.linear({0}, {1}, {2})", arity=3, accepts=ndim_at_least(1),
       partner=lambda chosen, s: (len(s) == 2 and s[1] == chosen[0][-1]) if len(chosen) == 1
       else s == chosen[1][:1]),
    Op("linear", "F.linear({0}, {0})", accepts=lambda shape: len(shape) == 2),
    Op("einsum", "T.einsum({equation}, {0})", accepts=ndim_at_least(1), params=einsum_params),
    Op("einsum", "T.einsum({equation}, {0}, {1})", arity=2, accepts=ndim_at_least(1),
       partner=same_shape, params=einsum_params),
    # convolution
    Op("conv", "F.conv1d({0}, {1}, " + CONV_ARGS + ")", arity=2, accepts=ndim_is(3),
       partner=conv_fits, params=conv_params),
    Op("conv", "F.conv1d({0}, {1}, {2}, " + CONV_ARGS + ")", arity=3, accepts=ndim_is(3),
       partner=conv_fits, params=conv_params),
    Op("conv", "F.conv2d({0}, {1}, " + CONV_ARGS + ")", arity=2, accepts=ndim_is(4),
       partner=conv_fits, params=conv_params),
    Op("conv", "F.conv_transpose1d({0}, {1}, stride={stride})", arity=2, accepts=ndim_is(3),
       partner=transpose_weight_fits, params=choice(stride=[1, 2])),
    Op("im2col", "F.unfold({0}, {kernel}, padding={padding}, stride={stride})",
       accepts=ndim_is(4), params=unfold_params),
    Op("col2im", "F.fold(F.unfold({0}, {kernel}), {0}.shape[-2:], {kernel})",
       accepts=ndim_is(4), params=unfold_params),
    # normalisation, losses, attention
    Op("layer_norm", "F.layer_norm({0}, {shape})", accepts=ndim_at_least(1), params=norm_shape),
    Op("layer_norm", "F.layer_norm({0}, {1}.shape, {1}, {2})", arity=3,
       accepts=ndim_at_least(1), partner=weight_fits),
    Op("rms_norm", "F.rms_norm({0}, {shape})", accepts=ndim_at_least(1), params=norm_shape),
    Op("rms_norm", "F.rms_norm({0}, {1}.shape, {1})", arity=2, accepts=ndim_at_least(1),
       partner=weight_fits),
    Op("cross_entropy", "F.cross_entropy({0}, {target}, reduction={reduction}, "
       "label_smoothing={label_smoothing})", accepts=ndim_at_least(1), params=cross_entropy_params),
    Op("scaled_dot_product_attention", "F.scaled_dot_product_attention({0}, {1}, {2}, "
       "is_causal={is_causal})", arity=3, accepts=ndim_at_least(2), partner=sdpa_fits,
       params=choice(is_causal=[False, True])),
    Op("scaled_dot_product_attention",
       "F.scaled_dot_product_attention({0}, 0.5 * {0}, -{0})", accepts=ndim_at_least(2)),
    Op("scaled_dot_product_attention", "F.scaled_dot_product_attention({0}, {0}, {0})",
       accepts=ndim_at_least(2)),
]

# Differentiable primitives no entry reaches, and why (a meta-test checks the rest are reached).
NOT_FUZZED = {
    "cast": "the fuzzer compares in float64 only; dtype changes are checked in test_ops",
    "to_device": "one device per run",
    "checkpoint": "it wraps a function of other primitives; tests/tensorgrad/"
                  "test_utils_checkpoint.py compares it with the function run directly",
    "scatter": "which of two writes to one place wins is unspecified in torch; "
               "tests/tensorgrad/test_torch_parity_select.py compares scatter on distinct indices",
}
