"""Scaled dot-product attention as one fused primitive: softmax(Q K^T * scale + M) V.

Why a primitive (benchmarks/attention.py): the composite matmul -> softmax -> matmul keeps the
(..., Tq, Tk) probabilities, and with a mask the masked scores too, alive until backward, and
its backward makes a pass per op. Inputs longer than one tile take a tiled path
(FlashAttention's online softmax) that never holds the whole (Tq, Tk) matrix, forward or
backward: it saves q, k, v, the additive bias, the (..., Tq, Ev) output and one log-sum-exp per
query row, and its VJP rebuilds the probabilities block by block, so memory grows linearly with
T. Each matrix's block loop, the whole path and their steps (the online-softmax step, the row
softmax and its VJP) are overridable: the CPU backend's compiled twins run the same blocks
without the Python between them. Shorter inputs (one tile of queries or keys) keep their
probabilities for a VJP in four matmuls and a few passes. Under no_grad nothing is kept. The
composite (`_attention_composite`, matmul -> softmax -> matmul) is what create_graph
differentiates and what the tests compare against.

Masks follow torch.nn.functional.scaled_dot_product_attention: a bool mask is True where a query
MAY attend; a float mask is added to the scores (0 keeps, -inf removes) and may require grad
(ALiBi slopes, T5's learned relative bias get their gradient from here). `is_causal` lets query
i see keys j <= i, aligned top-left when Tq != Tk, as PyTorch does.

Fully masked rows: PyTorch returns NaN for a query that may attend to no key. Here such a row
outputs 0 and passes no gradient, so a padded query cannot poison a batch. A row counts as fully
masked when none of its scores is above the dtype's lowest finite value (an additive -inf or
torch.finfo(dtype).min everywhere, or a bool mask that is all False).
"""
from ..autograd import primitive
from ..backend.overrides import overridable
from ..tensor import from_array
from .attention_inputs import broadcast_shapes, prepare_inputs, split_mask, ungroup_heads
from .select import maximum, where
from .softmax import softmax

# Queries and keys per block of scores. Once both lengths exceed one TILE, the tiled path runs:
# its memory grows linearly with T, and working in cache-sized blocks (skipping those above a
# causal diagonal) it is also faster than the whole matrix (benchmarks/attention.py). A block is
# TILE queries by up to KEY_TILE keys (512 KiB of float32 scores: in a core's L2; the block
# shapes compared are in benchmarks/README.md). The whole matrix stays for short inputs
# (decoding: Tq = 1) and dropout, whose keep-mask is whole anyway.
TILE = 256
KEY_TILE = 512


def _takes_tiles(q, k, dropout):
    """Whether the forward and the VJP take the tiled path: both lengths beyond one tile, and
    no dropout."""
    return dropout is None and min(q.shape[-2], k.shape[-2]) > TILE


def _tile(a, rows, cols):
    """a[..., rows, cols], except that broadcast (size-1) trailing dims stay whole."""
    return a[..., rows if a.shape[-2] > 1 else slice(None),
             cols if a.shape[-1] > 1 else slice(None)]


def _blocked(xp, mask, causal, rows, cols):
    """Which scores of the query `rows` x key `cols` block are removed: a bool array that
    broadcasts against them, or None when none is."""
    blocked = None if mask is None else ~_tile(mask, rows, cols)
    if causal and _first_future(rows, cols) < cols.stop - cols.start:
        after = _future(xp, rows, cols)
        blocked = after if blocked is None else blocked | after
    return blocked


def _first_future(rows, cols):
    """The block's first column that is some query's future: the keys before it are visible to
    all of the block's queries, so only the diagonal part of a block pays for a causal mask
    (benchmarks/: attention T=4096)."""
    return max(rows.start + 1 - cols.start, 0)


def _future(xp, rows, cols, first=0):
    """Key j after query i over the block's columns from `first` on: (r, c - first) bools."""
    return xp.arange(cols.start + first, cols.stop) > xp.arange(rows.start, rows.stop)[:, None]


# --- the primitive, on arrays ------------------------------------------------------------------
def _masked_scores(xp, q_rows, k, bias, mask, causal, rows, cols, buffer=None):
    """q k^T + bias for the query `rows` (q_rows: those rows of q, already scaled) and key
    `cols`, removed scores set to the dtype's lowest finite value (so is an additive -inf: one
    rule then finds fully masked rows). A (..., rows, cols) array free to be overwritten: a
    fresh one, or with `buffer` (the tiled path's, 2-D) the product written into its start."""
    k_t = k[..., cols, :].swapaxes(-1, -2)  # (E, c)
    if buffer is None:
        s = xp.matmul(q_rows, k_t)  # (r, E) @ (E, c)
    else:
        s = xp.matmul_into(q_rows, k_t, _block_of(buffer, q_rows.shape[0], k_t.shape[1]))
    lowest = xp.finfo(q_rows.dtype).min
    if bias is not None:
        s = s + xp.maximum(_tile(bias, rows, cols), lowest)
    if mask is not None:
        blocked = ~_tile(mask, rows, cols)
        shape = broadcast_shapes(s.shape, blocked.shape)
        if shape != s.shape:  # a mask with more batch dims than q and k
            s = xp.broadcast_to(s, shape).copy()
        xp.copyto(s, lowest, where=blocked)
    if causal and _first_future(rows, cols) < s.shape[-1]:
        _hide_future_(xp, s, rows, cols, lowest)
    return s


@overridable("attention.hide_future_")
def _hide_future_(xp, s, rows, cols, lowest):
    """Under is_causal, the scores (..., r, c) of the query `rows` for keys after them (of the
    key `cols`) set to `lowest`, in place."""
    first = _first_future(rows, cols)
    xp.copyto(s[..., first:], lowest, where=_future(xp, rows, cols, first))
    return s


def _block_of(buffer, rows, cols):
    """A C-contiguous (rows, cols) array over the start of a flat buffer (one block's scores)."""
    return buffer[:rows * cols].reshape(rows, cols)


@overridable("attention.online_step_")
def _online_step_(xp, s, top, acc, total):
    """An online-softmax step over a (r, c) block of scores, in place: raises the rows' running
    max `top` (r, 1) to cover the block, rescales the sums so far, P V `acc` (r, Ev) and rowsum
    P `total` (r, 1), to it, sets s = exp(s - new max) and adds its row sums to `total`."""
    new_top = xp.maximum(top, s.max(axis=-1, keepdims=True))
    shrink = xp.exp(top - new_top)
    acc *= shrink
    total *= shrink
    top[...] = new_top
    s -= new_top
    xp.exp(s, out=s)
    total += s.sum(axis=-1, keepdims=True)


@overridable("attention.exp_shifted_")
def _exp_shifted_(xp, s, shift):
    """s = exp(s - shift) in place: a (r, c) block of probabilities rebuilt from its rows'
    (r, 1) log-sum-exps."""
    s -= shift
    return xp.exp(s, out=s)


@overridable("attention.softmax_rows_")
def _softmax_rows_(xp, s, causal, masked, scale):
    """Row softmax of the scores s (..., Tq, Tk) times `scale`, in place (fresh (Tq, Tk) arrays
    are costly to fill); causal: query i sees keys j <= i (top-left, as is_causal). masked:
    whether scores were removed, so that a row may have none left; such rows become 0."""
    if scale != 1:
        s *= s.dtype.type(scale)
    if causal:
        whole = slice(0, s.shape[-2]), slice(0, s.shape[-1])
        if _first_future(*whole) < s.shape[-1]:
            _hide_future_(xp, s, *whole, xp.finfo(s.dtype).min)
    top = s.max(axis=-1, keepdims=True)
    s -= top
    xp.exp(s, out=s)
    s *= 1 / s.sum(axis=-1, keepdims=True)
    if masked:
        _zero_dead_rows(xp, s, top)
    return s


def _zero_dead_rows(xp, x, top):
    dead = top == xp.finfo(top.dtype).min
    if dead.any():
        x *= ~dead


def _log_sum_exp(xp, top, total):
    lse = top + xp.log(total)
    return xp.where(top == xp.finfo(top.dtype).min, xp.inf, lse).astype(top.dtype)


def _per_matrix(xp, batch, *arrays):
    """The tiled path works one (T, E) matrix at a time: a list of (index, arrays[index]) over
    the broadcast batch dims. Each block product is then a plain 2-D GEMM that reads transposed
    operands in place (BLAS's transpose flags), so no transposed copy of q, k, v or dO is made
    (benchmarks/: attention T=4096, time and peak memory). None entries stay None; arrays that
    already have the batch dims (the gradients being filled) are indexed as they are, writable."""
    full = [a if a is None or a.shape[:-2] == batch else xp.broadcast_to(a, batch + a.shape[-2:])
            for a in arrays]
    return [(i, [None if a is None else a[i] for a in full]) for i in _indices(batch)]


def _indices(shape):
    indices = [()]
    for size in shape:
        indices = [i + (j,) for i in indices for j in range(size)]
    return indices


def _batch(q, k, v, bias, mask):
    """The broadcast batch dims of the inputs and masks (the output's leading dims)."""
    return broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                             *(a.shape[:-2] for a in (bias, mask) if a is not None))


@overridable("attention.tiled")
def _tiled(xp, q, k, v, bias, mask, causal, scale, tile, key_tile):
    """The same output, one block of scores at a time with an online softmax (Milakov &
    Gimelshein, 2018; Dao et al.'s FlashAttention): each block raises the rows' running max and
    rescales what the earlier blocks added up by exp(old max - new max). Memory per step is one
    block of tile x key_tile scores, not the (Tq, Tk) matrix; with is_causal, keys after a
    block's last query are not visited. Returns the output and the rows' log-sum-exps."""
    tq, ev = q.shape[-2], v.shape[-1]
    batch = _batch(q, k, v, bias, mask)
    out = xp.empty(batch + (tq, ev), q.dtype)
    lse = xp.empty(batch + (tq, 1), q.dtype)

    def one_matrix(i, qi, ki, vi, bias_i, mask_i):  # writes out[i] and lse[i] only
        _tiled_matrix(xp, qi, ki, vi, bias_i, mask_i, causal, scale, out[i], lse[i], tile,
                      key_tile)
    # the matrices are independent: on several threads when the CPU backend has them
    xp.map_matrices(one_matrix, _per_matrix(xp, batch, q, k, v, bias, mask))
    return out, lse


def _tiled_matrix(xp, q, k, v, bias, mask, causal, scale, out, lse, tile, key_tile):
    """The tiled forward of one matrix, q (Tq, E), k (Tk, E), v (Tk, Ev), written into out
    (Tq, Ev) and the rows' log-sum-exps lse (Tq, 1), in blocks of tile x key_tile scores."""
    tq, tk, ev = q.shape[-2], k.shape[-2], v.shape[-1]
    lowest = xp.finfo(q.dtype).min
    # one block's scores at a time in one buffer, and the products written or added into
    # their targets: no fresh array, nor an add pass, per product (benchmarks/: attention)
    buffer = xp.empty(tile * key_tile, q.dtype)
    for rows in _spans(tq, tile):
        q_rows = q[rows] * q.dtype.type(scale)  # (r, E)
        top = xp.full((rows.stop - rows.start, 1), lowest, q.dtype)  # the rows' running max
        acc = xp.zeros((rows.stop - rows.start, ev), q.dtype)  # P V so far
        total = xp.zeros((rows.stop - rows.start, 1), q.dtype)  # rowsum P so far
        for cols in _spans(_visible(tk, rows, causal), key_tile):
            s = _masked_scores(xp, q_rows, k, bias, mask, causal, rows, cols, buffer)
            _online_step_(xp, s, top, acc, total)
            xp.matmul_into(s, v[cols], acc, accumulate=True)  # (r, c) @ (c, Ev)
        acc *= 1 / total
        _zero_dead_rows(xp, acc, top)
        out[rows] = acc
        lse[rows] = _log_sum_exp(xp, top, total)


def _visible(tk, rows, causal):
    """How many keys the query `rows` may see: under is_causal, none after the last of them."""
    return min(tk, rows.stop) if causal else tk


def _spans(length, step):
    return [slice(i, min(i + step, length)) for i in range(0, length, step)]


def _attention_composite(q, k, v, bias, mask, causal, scale, dropout):
    """The primitive in tensorgrad ops (the whole matrix), differentiated under create_graph."""
    whole = slice(0, q.shape[-2]), slice(0, k.shape[-2])
    p = _probabilities(q, k, bias, mask, causal, scale, *whole)
    if dropout is not None:
        p = p * from_array(dropout, q._backend)
    return p @ v  # (..., Tq, Tk) @ (..., Tk, Ev) -> (..., Tq, Ev)


@overridable("attention.one_query")
def _one_query(xp, q, k, v, scale):
    """One query row per matrix with every key visible (decoding with a KV cache): nothing to
    mask or tile, and the scores come as k times the query column, so a matrix-vector product
    reads the cached keys in place; the softmax kernel applies the scale (benchmarks/:
    generate, 4 calls per GPT-mini token)."""
    column = q.reshape(q.shape[:-2] + (q.shape[-1], 1))  # (..., E, 1), a view
    scores = xp.matmul(k, column)  # (..., Tk, E) @ (..., E, 1) -> (..., Tk, 1)
    scores = scores.reshape(scores.shape[:-2] + (1, scores.shape[-2]))  # (..., 1, Tk)
    p = _softmax_rows_(xp, scores, False, False, scale)
    return xp.matmul(p, v), p  # (..., 1, Tk) @ (..., Tk, Ev)


# What the VJP gets besides q, k, v, the bias and the output (when the call is recorded): the
# tiled path's row log-sum-exps, from which it rebuilds each block of probabilities; the whole
# path's probabilities themselves, which its forward materialised anyway (at most one tile of
# queries or of keys: rebuilding them would cost a batched matmul and an exp more). When the call
# is not recorded (no_grad, or no input needs a gradient) the engine drops both with the call.
@primitive("scaled_dot_product_attention", saves=(0, 1, 2, 3), saves_out=True, saves_extra=True,
           composite=_attention_composite)
def _attention(xp, q, k, v, bias, mask, causal, scale, dropout):
    if q.shape[-2] == 1 and bias is None and mask is None and dropout is None and not causal:
        return _one_query(xp, q, k, v, scale)
    if _takes_tiles(q, k, dropout):
        return _tiled(xp, q, k, v, bias, mask, causal, scale, TILE, KEY_TILE)
    return _whole(xp, q, k, v, bias, mask, causal, scale, dropout)


@overridable("attention.whole")
def _whole(xp, q, k, v, bias, mask, causal, scale, dropout):
    """(out, p): the whole (..., Tq, Tk) matrix of probabilities at once."""
    whole = slice(0, q.shape[-2]), slice(0, k.shape[-2])
    masked = bias is not None or mask is not None
    if masked:  # the scale before the bias is added; the softmax then has none to apply
        scores = _masked_scores(xp, q * q.dtype.type(scale), k, bias, mask, causal, *whole)
        p = _softmax_rows_(xp, scores, False, True, 1.0)
    else:  # the softmax applies is_causal and the scale: no scaled copy of q (gpt_step)
        # k^T as a view: the backend lays it out only if the product needs it
        p = _softmax_rows_(xp, _masked_scores(xp, q, k, None, None, False, *whole), causal,
                           False, scale)
    out = xp.matmul(p if dropout is None else p * dropout, v)  # (..., Tq, Tk) @ (..., Tk, Ev)
    return out, p


@_attention.defvjp
def _attention_vjp(ctx, g):
    # With O = P V and P = softmax(S): dV = P^T dO, dP = dO V^T and
    # dS = P * (dP - rowsum(dP * P)), where rowsum(dP * P) = rowsum(dO * O) (FlashAttention's
    # trick: an (..., Tq) sum over the output, not over the (..., Tq, Tk) matrix). dQ = dS K
    # scale and dK = dS^T Q scale. Arrays throughout: the composite covers create_graph.
    q, k, v, bias = (None if t is None else t.data for t in ctx.inputs)
    a, xp = ctx.attrs, ctx.backend
    if _takes_tiles(q, k, a["dropout"]):
        grads = _tiled_vjp(xp, q, k, v, bias, a["mask"], a["causal"], a["scale"], g.data,
                           ctx.out_data, ctx.extra, ctx.needs_grad, TILE, KEY_TILE)
    else:
        grads = _whole_vjp(xp, q, k, v, a["dropout"], a["scale"], g.data, ctx.out_data,
                           ctx.extra, ctx.needs_grad)
    return tuple(None if d is None else from_array(d, xp) for d in grads)


@overridable("attention.whole_vjp")
def _whole_vjp(xp, q, k, v, dropout, scale, g, out, p, needs):
    """The whole path's gradients, the batch in one go, from the forward's probabilities p
    (read only: backward may run twice). Each is one product, returned as it comes (dK and dV
    as transposed views), not added into zero-filled arrays (benchmarks/: gpt_step)."""
    needs_q, needs_k, needs_v, needs_bias = needs
    dv = _transposed_product(xp, p if dropout is None else p * dropout, g) if needs_v else None
    if not (needs_q or needs_k or needs_bias):
        return None, None, dv, None
    delta = _row_dots(xp, g, out)  # (..., Tq, 1)
    dp = xp.matmul(g, v.swapaxes(-1, -2))  # dO V^T
    # dQ and dK are products with dS * scale: applied in dS's own pass, it spares a pass over
    # dQ and a scaled copy of q (benchmarks/: gpt_step). The bias's gradient is dS itself.
    ds = _softmax_backward_(xp, dp, p, delta, dropout, 1.0 if needs_bias else scale)
    rest = q.dtype.type(scale if needs_bias else 1.0)  # the scale the products still need
    dq = dk = None
    if needs_q:
        dq = xp.matmul(ds, k)  # (..., Tq, Tk) @ (Tk, E)
        if rest != 1:
            dq *= rest
    if needs_k:
        dk = _transposed_product(xp, ds, q if rest == 1 else q * rest)
    return dq, dk, dv, ds if needs_bias else None


@overridable("attention.tiled_vjp")
def _tiled_vjp(xp, q, k, v, bias, mask, causal, scale, g, out, lse, needs, tile, key_tile):
    """The tiled path's gradients: each block of P rebuilt from its scores and the rows' saved
    log-sum-exps, exp(S - lse), one (T, E) matrix and one block at a time, its products added
    into the gradients."""
    needs_q, needs_k, needs_v, needs_bias = needs
    tq, tk = q.shape[-2], k.shape[-2]
    batch = g.shape[:-2]
    dq = xp.zeros(batch + q.shape[-2:], q.dtype) if needs_q else None
    dk = xp.zeros(batch + k.shape[-2:], k.dtype) if needs_k else None
    dv = xp.zeros(batch + v.shape[-2:], v.dtype) if needs_v else None
    dbias = xp.zeros(broadcast_shapes(batch + (tq, tk), bias.shape), bias.dtype) \
        if needs_bias else None

    # writes its own matrix's gradients only (they have the broadcast batch dims, one per item)
    def one_matrix(_, qi, ki, vi, gi, oi, bias_i, mask_i, lse_i, dqi, dki, dvi, dbias_i):
        _tiled_matrix_vjp(xp, qi, ki, vi, gi, oi, bias_i, mask_i, lse_i, causal, scale, dqi,
                          dki, dvi, dbias_i, tile, key_tile)
    xp.map_matrices(one_matrix, _per_matrix(xp, batch, q, k, v, g, out, bias, mask, lse, dq, dk,
                                            dv, dbias))
    if dq is not None:
        dq *= q.dtype.type(scale)
    return dq, dk, dv, dbias


def _tiled_matrix_vjp(xp, q, k, v, g, out, bias, mask, lse, causal, scale, dq, dk, dv, dbias,
                      tile, key_tile):
    """The tiled VJP of one matrix: dO g, the forward's output (Tq, Ev) and lse (Tq, 1) in;
    dQ / scale, dK, dV added into dq, dk, dv and dS written into dbias (None: not wanted)."""
    tq, tk = q.shape[-2], k.shape[-2]
    p_buffer, ds_buffer = xp.empty(tile * key_tile, q.dtype), xp.empty(tile * key_tile, q.dtype)
    for rows in _spans(tq, tile):
        q_rows = q[rows] * q.dtype.type(scale)  # (r, E); dQ is scaled once at the end
        g_rows = g[rows]
        delta = _row_dots(xp, g_rows, out[rows])  # (r, 1)
        for cols in _spans(_visible(tk, rows, causal), key_tile):
            p = _masked_scores(xp, q_rows, k, bias, mask, causal, rows, cols, p_buffer)  # (r, c)
            _exp_shifted_(xp, p, lse[rows])
            if dv is not None:
                xp.matmul_into(p.T, g_rows, dv[cols], accumulate=True)  # P^T dO
            if dq is None and dk is None and dbias is None:
                continue
            dp = xp.matmul_into(g_rows, v[cols].T, _block_of(ds_buffer, *p.shape))  # dO V^T
            ds = _softmax_backward_(xp, dp, p, delta, None, 1.0)
            if dq is not None:
                xp.matmul_into(ds, k[cols], dq[rows], accumulate=True)  # (r, c) @ (c, E)
            if dk is not None:
                xp.matmul_into(ds.T, q_rows, dk[cols], accumulate=True)  # dS^T (scale Q)
            if dbias is not None:
                dbias[..., rows, cols] = ds


def _row_dots(xp, g, out):
    """rowsum(dO * O) over the last dim, (..., r, 1): FlashAttention's delta. One einsum reads
    both once, where the product and its sum make a temporary and a short-axis sum (gpt_step)."""
    return xp.einsum("...ij,...ij->...i", g, out)[..., None]


@overridable("attention.softmax_backward_")
def _softmax_backward_(xp, dp, p, delta, dropout, scale):
    """dS = P * (dP * dropout - delta) * scale, in place over dP (..., r, c); delta (..., r, 1)."""
    if dropout is not None:
        dp *= dropout
    dp -= delta
    dp *= p
    if scale != 1:
        dp *= dp.dtype.type(scale)
    return dp


def _transposed_product(xp, a, b):
    """a^T b. BLAS reads a 2-D a^T in place (its transpose flag); a batched product would copy
    a stack of a^T, so there (b^T a)^T is formed, whose transposed operand is the smaller b, and
    returned as that transposed view (benchmarks/: attention)."""
    if a.ndim == 2:
        return xp.matmul(a.T, b)  # (c, r) @ (r, E)
    return xp.matmul(b.swapaxes(-1, -2), a).swapaxes(-1, -2)  # (E, r) @ (r, c), transposed


def _probabilities(q, k, bias, mask, causal, scale, rows, cols):
    """softmax(q k^T * scale + bias) for the query `rows` x key `cols` block under the masks,
    in tensorgrad ops (differentiable to any order), with the primitive's rule for fully masked
    rows."""
    xp = q._backend
    lowest = float(xp.finfo(q.dtype).min)
    s = (q[..., rows, :] * scale) @ k[..., cols, :].mT  # (..., r, E) @ (..., E, c) -> (..., r, c)
    if bias is not None:
        s = s + maximum(_tile(bias, rows, cols), lowest)
    blocked = _blocked(xp, mask, causal, rows, cols)
    if blocked is not None:
        s = where(from_array(blocked, xp), lowest, s)
    p = softmax(s, dim=-1)
    if mask is None and bias is None:  # is_causal alone leaves every row a key
        return p
    live = s.data.max(axis=-1, keepdims=True) > lowest
    return p if bool(live.all()) else where(from_array(live, xp), p, 0.0)


# --- the public functions -----------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query key^T * scale + mask) value, as torch.nn.functional's.

    query: (..., Hq, Tq, E); key: (..., Hk, Tk, E); value: (..., Hk, Tk, Ev); leading dims
    broadcast. Returns (..., Hq, Tq, Ev).
    attn_mask: bool (True = may attend) or float (added to the scores; it may require grad),
        broadcastable to (..., Hq, Tq, Tk).
    dropout_p: dropout on the attention probabilities (pass 0 when evaluating, as in PyTorch).
    is_causal: query i attends to keys j <= i (top-left aligned when Tq != Tk). Unlike PyTorch,
        it may be combined with attn_mask; both then apply.
    scale: defaults to 1 / sqrt(E).
    enable_gqa: grouped-query attention: Hk divides Hq and query head h reads key/value head
        h // (Hq / Hk), without copying key and value.
    A query row with no key left to attend to outputs 0 (PyTorch: NaN); see the module docstring.
    """
    query, key, value, attn_mask, scale, groups = prepare_inputs(
        "scaled_dot_product_attention", query, key, value, attn_mask, scale, enable_gqa)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got "
                         f"{dropout_p}")
    bias, mask = split_mask(attn_mask)
    dropout = None
    if dropout_p > 0.0:
        xp = query._backend
        shapes = [query.shape[:-1] + (key.shape[-2],), key.shape[:-2] + (1, 1),
                  value.shape[:-2] + (1, 1)] + ([attn_mask.shape] if attn_mask is not None else [])
        shape = broadcast_shapes(*shapes)  # the probabilities' shape
        keep = xp.random_uniform(shape, query.dtype) >= dropout_p
        dropout = keep.astype(query.dtype) * query.dtype.type(1.0 / (1.0 - dropout_p))
    out = _attention(query, key, value, bias, mask=mask, causal=bool(is_causal), scale=scale,
                     dropout=dropout)
    return ungroup_heads(out, groups)


def attention_weights(query, key, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """The attention probabilities softmax(query key^T * scale + mask), (..., Hq, Tq, Tk), for
    visualisation; arguments and masking rules as in `scaled_dot_product_attention` (no
    dropout). Differentiable; it materialises the full matrix, so use it only to look."""
    query, key, _, attn_mask, scale, groups = prepare_inputs(
        "attention_weights", query, key, key, attn_mask, scale, enable_gqa)
    bias, mask = split_mask(attn_mask)
    whole = slice(0, query.shape[-2]), slice(0, key.shape[-2])
    return ungroup_heads(_probabilities(query, key, bias, mask, bool(is_causal), scale, *whole),
                    groups)
