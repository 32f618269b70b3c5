"""Attention patterns cheaper than O(T^2): which keys each query may attend, computed blockwise.

- `SlidingWindow`: a window of keys on each side, plus global tokens that attend to and are
  attended by every position (Longformer, Beltagy et al., 2020).
- `BigBird`: a window of blocks, global blocks and random blocks (Zaheer et al., 2020).
- `Strided`: the previous `stride` positions and every stride-th one before them (the Sparse
  Transformer's strided pattern, Child et al., 2019, both heads' patterns merged).
- `LinearAttention`: softmax replaced by a kernel, phi(Q) (phi(K)^T V), O(T) for every key
  (Katharopoulos et al., 2020); see tensorgrad.ops.linear_attention.

A pattern is given to `nn.Attention(pattern=...)` (self-attention only), or called on
projected heads: `pattern(q, k, v, is_causal=True)`. The sparse ones never build the (T, T)
matrix: queries are grouped into blocks and each block gathers its keys (window, global tokens,
random blocks) with index ops, `tensorgrad.ops.sparse_attention` (memory and time linear in T
for a fixed window). Each is exactly dense attention with the bool mask `pattern.mask(T)`
(tests/nn/test_attention_patterns.py checks values and gradients). Masks follow SDPA: True =
may attend; key padding masks are (B, T), True at padding. Decoding: with a `KVCache` every
pattern attends its mask's rows over the cache; `SlidingWindow.make_cache()` gives a cache that
keeps only the window (and global tokens), `LinearAttention.make_cache()` its O(1) state.
"""
import random

import tensorgrad as tg
from tensorgrad.ops.linear_attention import feature_map_fn, linear_attention
from tensorgrad.ops.sparse_attention import block_sparse_attention, merge_attention

from . import functional as F
from .attention_caches import KVCache, LinearAttentionState, RollingKVCache
from .masks import merge_masks, to_bool
from .positional import alibi_bias, alibi_slopes


class AttentionPattern:
    """What the patterns share: the dense mask, the blocked forward and decoding by mask rows.

    A subclass gives `allows(qpos, kpos, length, causal)` (bool, broadcast over integer
    positions: may query qpos see key kpos in a sequence of `length`? The causal triangle is
    applied on top) and `parts(length, causal, device)`: a list of (query_index or None,
    key_index, allowed) for `block_sparse_attention` whose key sets are disjoint and together
    cover exactly what `allows` allows (the tests compare the two).
    """
    alibi = False  # add ALiBi's -slope_h * |i - j| to the scores (slopes from the head count)

    def mask(self, length, causal=False, device=None):
        """The (T, T) bool mask this pattern is equal to (True = may attend). It builds the
        whole matrix: for tests and pictures, not for computing."""
        pos = tg.arange(length, device=device)
        return self._allows(pos.unsqueeze(-1), pos, length, causal)

    def make_cache(self):
        """A fresh cache for incremental decoding with this pattern (one per layer)."""
        return KVCache()

    def __call__(self, q, k, v, key_padding_mask=None, is_causal=False, cache=None,
                 dropout_p=0.0, scale=None, enable_gqa=False):
        """Self-attention of q (B, Hq, T, E) over k, v (B, Hk, T, E/Ev) restricted to the
        pattern; returns (B, Hq, T, Ev). key_padding_mask: (B, T_past + T), True at padding.
        cache: from `make_cache()` (or a KVCache), extended in place; T_past = len(cache)."""
        past = len(cache) if cache is not None else 0
        if key_padding_mask is not None and key_padding_mask.dtype.kind == "f":
            key_padding_mask = ~to_bool(key_padding_mask)  # additive (-inf at padding) -> bool
        key_positions = None
        if cache is not None:
            k, v, key_positions = _update(cache, k, v)
        slopes = alibi_slopes(q.shape[-3], device=q.device, dtype=q.dtype) if self.alibi \
            else None
        options = dict(dropout_p=dropout_p, scale=scale, enable_gqa=enable_gqa)
        if past == 0 and q.shape[-2] == k.shape[-2]:  # the whole sequence: blocked
            parts = [block_sparse_attention(q, k, v, key_index, allowed, query_index,
                                            key_padding_mask, slopes, **options)
                     for query_index, key_index, allowed in self._parts(q.shape[-2], is_causal,
                                                                        q.device)]
            return merge_attention(*parts)
        # Decoding: a few new queries, their rows of the mask over the keys kept
        qpos = tg.arange(past, past + q.shape[-2], device=q.device).unsqueeze(-1)  # (Tq, 1)
        if key_positions is None:
            key_positions = tg.arange(k.shape[-2], device=q.device)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask[:, key_positions]
        mask = self._allows(qpos, key_positions, past + q.shape[-2], is_causal)  # (Tq, Tk)
        if key_padding_mask is not None:
            mask = mask & ~key_padding_mask.unsqueeze(1).unsqueeze(1)  # (B, 1, Tq, Tk)
        if slopes is not None:
            distance = (qpos - key_positions).abs().to(q.dtype)
            mask = tg.where(mask, 0.0, float("-inf")).to(q.dtype) - slopes.reshape(-1, 1, 1) \
                * distance
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)

    def weights(self, q, k, attn_mask=None, is_causal=False, enable_gqa=False):
        """The (B, H, T, T) attention probabilities of the pattern, for looking at (it builds
        the whole matrix). attn_mask: a further bool or additive mask (key padding)."""
        T = q.shape[-2]
        mask = merge_masks(attn_mask, self.mask(T, is_causal, device=q.device), dtype=q.dtype)
        if self.alibi:
            slopes = alibi_slopes(q.shape[-3], device=q.device, dtype=q.dtype)
            mask = merge_masks(mask, alibi_bias(slopes, T), dtype=q.dtype)
        return F.attention_weights(q, k, attn_mask=mask, enable_gqa=enable_gqa)

    def _allows(self, qpos, kpos, length, causal):
        allowed = self.allows(qpos, kpos, length, causal)
        return allowed & (kpos <= qpos) if causal else allowed

    def _parts(self, length, causal, device):
        """parts(length, causal), computed once per length, causality and device (layouts are
        small integer tables; every layer of a model shares its pattern)."""
        store = self.__dict__.setdefault("_layouts", {})
        key = (length, bool(causal), str(device))
        if key not in store:
            if len(store) > 32:
                store.clear()
            store[key] = self.parts(length, bool(causal), device)
        return store[key]


def _update(cache, k, v):
    """Extend a cache; returns the keys and values to attend and their positions (None when
    they are all positions from 0)."""
    if isinstance(cache, RollingKVCache):
        return cache.update(k, v)
    if isinstance(cache, KVCache):
        k, v = cache.update(k, v)
        return k, v, None
    raise TypeError(f"attention pattern: expected a KVCache or RollingKVCache as cache, got "
                    f"{type(cache).__name__}")


def _table(positions, size, device):
    """A (size + 1,) bool table, True at `positions` (the extra entry stays False)."""
    table = tg.zeros(size + 1, dtype=tg.bool_, device=device)
    if positions:
        table[tg.tensor(list(positions), dtype=tg.int64, device=device)] = True
    return table


class _LocalGlobal(AttentionPattern):
    """A local range of keys around each query block, global tokens, and (BigBird) random key
    blocks. Subclasses give block_size, `_reach` (how far the local range extends on each
    side), `_local(qpos, kpos)`, `global_positions(length)` and `random_blocks(nb, causal)`."""

    def random_blocks(self, nb, causal, device=None):
        return None

    def allows(self, qpos, kpos, length, causal):
        top = max(length, 1)
        table = _table(self.global_positions(length), top, qpos.device)
        rule = self._local(qpos, kpos) | table[qpos.clamp(0, top)] | table[kpos.clamp(0, top)]
        nb = -(-top // self.block_size)
        blocks = self.random_blocks(nb, causal, qpos.device)
        if blocks is not None:
            rows = blocks[(qpos // self.block_size).clamp(0, nb - 1)]  # (..., r)
            rule = rule | (rows == (kpos // self.block_size).unsqueeze(-1)).any(-1)
        return rule

    def parts(self, length, causal, device):
        b, reach = self.block_size, self._reach
        nb = -(-length // b)
        glob = sorted(self.global_positions(length))
        is_global = _table(glob, length, device)
        qpos = tg.arange(nb * b, device=device).reshape(nb, b, 1)  # (nb, b, 1)
        # queries that are no global token and not past the end: the ones the blocks serve
        served = (qpos < length) & ~is_global[qpos.clamp(0, length)]
        after = 0 if causal else reach
        keys = (tg.arange(nb, device=device) * b - reach).unsqueeze(-1) \
            + tg.arange(b + reach + after, device=device)  # (nb, L) local range
        kpos = keys.unsqueeze(1)  # (nb, 1, L)
        local = served & (kpos >= 0) & (kpos < length) & self._local(qpos, kpos) \
            & ~is_global[kpos.clamp(0, length)]
        allowed = [local & (kpos <= qpos) if causal else local]
        index = [keys.clamp(0, length - 1)]
        if glob:
            g = tg.tensor(glob, dtype=tg.int64, device=device)
            index.append(g.expand(nb, len(glob)))
            allowed.append(served & (g <= qpos) if causal else served)
        blocks = self.random_blocks(nb, causal, device)
        if blocks is not None:
            rand = (blocks.unsqueeze(-1) * b + tg.arange(b, device=device)).reshape(nb, -1)
            valid = (blocks.unsqueeze(-1) >= 0).expand(nb, blocks.shape[1], b).reshape(nb, 1, -1)
            index.append(rand.clamp(0, length - 1))
            ok = served & valid & (rand.unsqueeze(1) < length)
            allowed.append(ok & (rand.unsqueeze(1) <= qpos) if causal else ok)
        allowed = [a.expand(nb, b, i.shape[1]) for a, i in zip(allowed, index)]
        parts = [(None, tg.cat(index, dim=1), tg.cat(allowed, dim=-1))]
        if glob:  # the global queries: a block of their own that reads every key
            g = tg.tensor(glob, dtype=tg.int64, device=device)
            every = tg.arange(length, device=device).unsqueeze(0)  # (1, T)
            see = (every <= g.unsqueeze(-1)) if causal else tg.ones(len(glob), length,
                                                                     dtype=tg.bool_, device=device)
            parts.append((g.unsqueeze(0), every, see.unsqueeze(0)))
        return parts


class SlidingWindow(_LocalGlobal):
    """Each query attends to the keys at most `window` positions away (before it only, when
    causal: window + 1 keys with itself), plus global tokens (Longformer).

    global_tokens: an int n (the first n positions, e.g. [CLS]) or a list of positions; they
    attend to every key and every query attends to them. block_size: queries per block (default
    the window, at least 16): each block reads block_size + 2 window keys (block_size + window
    causal). alibi: add ALiBi's distance penalty (slopes from the head count).
    """

    def __init__(self, window=128, global_tokens=0, block_size=None, alibi=False):
        if window < 0:
            raise ValueError(f"SlidingWindow: window must be >= 0, got {window}")
        self.window, self.global_tokens, self.alibi = window, global_tokens, alibi
        self.block_size = block_size or max(window, 16)
        self._reach = window

    def global_positions(self, length):
        g = self.global_tokens
        positions = range(min(g, length)) if isinstance(g, int) else g
        return [p for p in positions if 0 <= p < length]

    def _local(self, qpos, kpos):
        return (qpos - kpos).abs() <= self.window

    def make_cache(self):
        """A cache that keeps the last `window` keys and values (and the global tokens'):
        decoding memory stays constant. Global tokens must then be a prefix (an int)."""
        if not isinstance(self.global_tokens, int):
            raise ValueError("SlidingWindow.make_cache: decoding with a rolling cache needs "
                             "global tokens given as a count (the first n positions), got "
                             f"positions {self.global_tokens}")
        return RollingKVCache(self.window, keep=self.global_tokens)

    def __repr__(self):
        return (f"SlidingWindow(window={self.window}, global_tokens={self.global_tokens}, "
                f"block_size={self.block_size}, alibi={self.alibi})")


class BigBird(_LocalGlobal):
    """BigBird's block-sparse pattern: query block i attends to key blocks i-1, i, i+1 (the
    window, `window_blocks` = 3), the first `global_blocks` blocks (global tokens, which also
    attend to everything) and `random_blocks` random other blocks. The random blocks are drawn
    once per query block from `seed` (the same in every head and layer sharing the pattern);
    causal drawing picks only earlier blocks, so a table stays the same as the length grows.
    Hugging Face's BigBird makes the first and the last block global; here the first ones are,
    which keeps the pattern usable by causal models.
    """

    def __init__(self, block_size=64, window_blocks=3, global_blocks=1, random_blocks=3, seed=0,
                 alibi=False):
        if window_blocks < 1 or window_blocks % 2 == 0:
            raise ValueError(f"BigBird: window_blocks must be odd and positive, got "
                             f"{window_blocks}")
        self.block_size, self.window_blocks = block_size, window_blocks
        self.global_blocks, self.num_random_blocks, self.seed = global_blocks, random_blocks, seed
        self.alibi = alibi
        self._radius = window_blocks // 2
        self._reach = self._radius * block_size
        self._tables = {}

    def global_positions(self, length):
        return list(range(min(self.global_blocks * self.block_size, length)))

    def _local(self, qpos, kpos):
        return (qpos // self.block_size - kpos // self.block_size).abs() <= self._radius

    def random_blocks(self, nb, causal, device=None):
        """(nb, random_blocks) int64 Tensor of each query block's random key blocks (-1: none
        left to draw), outside its window and the global blocks."""
        if self.num_random_blocks == 0:
            return None
        key = (nb, causal, str(device))
        if key not in self._tables:
            rows = []
            for i in range(nb):
                far = range(self.global_blocks, i - self._radius) if causal else \
                    [j for j in range(self.global_blocks, nb) if abs(j - i) > self._radius]
                rng = random.Random(self.seed * 1_000_003 + i)
                picked = sorted(rng.sample(list(far), min(self.num_random_blocks, len(far))))
                if i < self.global_blocks:
                    picked = []  # global query blocks read every key anyway
                rows.append(picked + [-1] * (self.num_random_blocks - len(picked)))
            self._tables[key] = tg.tensor(rows, dtype=tg.int64, device=device)
        return self._tables[key]

    def __repr__(self):
        return (f"BigBird(block_size={self.block_size}, window_blocks={self.window_blocks}, "
                f"global_blocks={self.global_blocks}, random_blocks={self.num_random_blocks}, "
                f"seed={self.seed})")


class Strided(AttentionPattern):
    """The Sparse Transformer's strided pattern: each query attends to the keys less than
    `stride` positions away (the previous stride keys with itself, when causal) and to those a
    multiple of `stride` away (the two heads' patterns of Child et al., merged into one).

    reach: how far the strided part looks (keys at most reach positions away); None is the
    paper's pattern, every stride-th key of the sequence: cost O(T^2 / stride), which with
    stride ~ sqrt(T) is the paper's O(T sqrt T). A fixed reach makes the cost linear in T.
    The strided part groups queries by position modulo stride: there its keys are neighbours,
    and blocks of `column_block` queries of one residue gather them like a window.
    """

    def __init__(self, stride=64, reach=None, column_block=32, alibi=False):
        if stride < 1 or (reach is not None and reach < 0):
            raise ValueError(f"Strided: stride must be >= 1 and reach >= 0, got stride={stride}"
                             f", reach={reach}")
        self.stride, self.reach, self.column_block, self.alibi = stride, reach, column_block, alibi

    def allows(self, qpos, kpos, length, causal):
        gap = (qpos - kpos).abs()
        strided = (gap % self.stride) == 0
        if self.reach is not None:
            strided = strided & (gap <= self.reach)
        return (gap < self.stride) | strided

    def parts(self, length, causal, device):
        s = self.stride
        # local: blocks of `stride` queries, each reading its keys less than stride away
        nb, reach = -(-length // s), s - 1
        qpos = tg.arange(nb * s, device=device).reshape(nb, s, 1)
        keys = (tg.arange(nb, device=device) * s - reach).unsqueeze(-1) \
            + tg.arange(s + reach + (0 if causal else reach), device=device)
        kpos = keys.unsqueeze(1)
        local = (qpos < length) & (kpos >= 0) & (kpos < length) & ((qpos - kpos).abs() < s)
        if causal:
            local = local & (kpos <= qpos)
        parts = [(None, keys.clamp(0, length - 1), local)]
        # strided: the sequence as a (rows, stride) grid; column r holds r, r + s, r + 2s, ...
        rows = -(-length // s)
        hops = rows if self.reach is None else min(rows, self.reach // s)
        if hops == 0 or rows == 1:
            return parts
        c = rows if self.reach is None else max(1, min(rows, self.column_block))
        chunks = -(-rows // c)
        first = tg.arange(chunks, device=device) * c  # (chunks,) first row of each block
        residue = tg.arange(s, device=device).reshape(s, 1, 1)  # (s, 1, 1)
        q_rows = first.reshape(1, chunks, 1) + tg.arange(c, device=device)  # (1, chunks, c)
        before, after = (rows, rows) if self.reach is None else (hops, 0 if causal else hops)
        if self.reach is None:
            k_rows = tg.arange(rows, device=device).expand(1, chunks, rows)
        else:
            k_rows = (first - before).reshape(1, chunks, 1) \
                + tg.arange(c + before + after, device=device)
        q = (q_rows * s + residue).reshape(s * chunks, c)  # query positions of each block
        k = (k_rows * s + residue).reshape(s * chunks, -1)  # (blocks, L) key positions
        k_ok = (k_rows >= 0).expand(s, chunks, k_rows.shape[-1]).reshape(s * chunks, 1, -1) \
            & (k.unsqueeze(1) < length)
        qcol, kcol = q.unsqueeze(-1), k.unsqueeze(1)  # (blocks, c, 1), (blocks, 1, L)
        strided = (qcol < length) & k_ok & (qcol != kcol)
        if self.reach is not None:
            strided = strided & ((qcol - kcol).abs() <= self.reach)
        if causal:
            strided = strided & (kcol <= qcol)
        query_index = q.where(q < length, length)  # past the end: an empty slot
        parts.append((query_index, k.clamp(0, length - 1), strided))
        return parts

    def __repr__(self):
        return f"Strided(stride={self.stride}, reach={self.reach})"


class LinearAttention(AttentionPattern):
    """Kernelised linear attention (Katharopoulos et al., 2020): phi(q) . phi(k) in place of
    exp(q . k), every key seen, O(T) time and memory. feature_map: 'elu' (elu + 1, the
    paper's), 'relu' or a callable; eps: added to the normaliser; chunk_size: of the causal
    prefix sums. ALiBi has no place here (there are no scores to bias) and neither has
    dropout on probabilities (none are formed): both are refused. Decoding carries the O(1)
    recurrent state (`make_cache()`)."""

    def __init__(self, feature_map="elu", eps=1e-6, chunk_size=64):
        self.feature_map, self.eps, self.chunk_size = feature_map, eps, chunk_size

    def allows(self, qpos, kpos, length, causal):
        return (qpos >= 0) & (kpos >= 0)  # every key (weighted by the kernel)

    def make_cache(self):
        return LinearAttentionState()

    def weights(self, q, k, attn_mask=None, is_causal=False, enable_gqa=False):
        """The (B, H, T, T) weights phi(q_i) . phi(k_j) / sum_j, for looking at."""
        phi = feature_map_fn(self.feature_map)
        if enable_gqa:
            k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        scores = phi(q) @ phi(k).mT  # (B, H, T, E) @ (B, H, E, T) -> (B, H, T, T)
        keep = self.mask(q.shape[-2], is_causal, device=q.device)
        if attn_mask is not None:
            keep = keep & (attn_mask if attn_mask.dtype.kind == "b" else to_bool(attn_mask))
        scores = scores * keep.to(scores.dtype)
        return scores / (scores.sum(-1, keepdim=True) + self.eps)

    def __call__(self, q, k, v, key_padding_mask=None, is_causal=False, cache=None,
                 dropout_p=0.0, scale=None, enable_gqa=False):
        if dropout_p:
            raise ValueError("LinearAttention: attention dropout has no probabilities to drop "
                             "here; set the attention dropout to 0")
        if cache is not None and not isinstance(cache, LinearAttentionState):
            raise TypeError(f"LinearAttention: expected a LinearAttentionState as cache "
                            f"(make_cache()), got {type(cache).__name__}")
        if scale is not None:  # a scale on q . k becomes a scale on the queries
            q = q * scale
        if key_padding_mask is not None and cache is not None:
            key_padding_mask = key_padding_mask[:, len(cache):]  # earlier keys: in the state
        out, state = linear_attention(
            q, k, v, is_causal=is_causal, feature_map=self.feature_map,
            key_padding_mask=key_padding_mask, eps=self.eps, chunk_size=self.chunk_size,
            state=None if cache is None else cache.state, return_state=True,
            enable_gqa=enable_gqa)
        if cache is not None:
            cache.advance(state, k.shape[-2])
        return out

    def __repr__(self):
        return f"LinearAttention(feature_map={self.feature_map!r}, eps={self.eps})"


# The names a config may hold (GPTConfig.attention, ...): each with its default parameters.
PATTERNS = {"sliding_window": SlidingWindow, "bigbird": BigBird, "strided": Strided,
            "linear": LinearAttention}


def make_pattern(spec):
    """A config's attention choice as a pattern: 'dense' or None -> None (plain attention), a
    name in PATTERNS -> that pattern with its defaults, a pattern -> itself."""
    if spec is None or spec == "dense":
        return None
    if isinstance(spec, AttentionPattern):
        return spec
    if spec not in PATTERNS:
        raise ValueError(f"attention pattern: unknown {spec!r}; expected 'dense', one of "
                         f"{sorted(PATTERNS)} or an AttentionPattern")
    return PATTERNS[spec]()
