"""Decoding caches for the attention patterns (see attention_patterns.py).

- `RollingKVCache`: sliding-window attention only ever looks `window` keys back, so the cache
  keeps the last `window` keys and values (and those of a prefix of global tokens): memory per
  layer stays constant however long the generation runs.
- `LinearAttentionState`: linear attention's whole past is two sums, S = sum_j phi(k_j) v_j^T
  and z = sum_j phi(k_j); each new token costs O(1) (Katharopoulos et al.'s RNN view).
Both equal their uncached forms (tests/nn/test_attention_patterns_decoding.py).
"""
import tensorgrad as tg

from .attention import KVCache  # noqa: F401  (re-exported: the cache the other patterns use)


class RollingKVCache:
    """The keys and values a sliding window of `window` keys (plus the first `keep` positions,
    the global tokens) can still need. `len()` is the number of positions seen, which is where
    the next token's position (rotary, learned embeddings) starts.

    update(k, v) appends (B, H, T_new, D) keys and values and returns everything the new
    queries may attend (the kept keys, then the new ones) with their positions (Tk,); it then
    drops the keys no later query can reach.
    """

    def __init__(self, window, keep=0):
        self.window, self.keep = window, keep
        self.key = self.value = self.positions = None
        self._seen = 0

    def __len__(self):
        return self._seen

    def update(self, key, value):
        new = key.shape[-2]
        fresh = tg.arange(self._seen, self._seen + new, device=key.device)
        if self.key is None:
            keys, values, positions = key, value, fresh
        else:
            keys = tg.cat([self.key, key], dim=-2)
            values = tg.cat([self.value, value], dim=-2)
            positions = tg.cat([self.positions, fresh])
        self._seen += new
        # what a query at position >= seen may still read: the global prefix and the window
        kept = (positions < self.keep) | (positions >= self._seen - self.window)
        if bool(kept.all()):
            self.key, self.value, self.positions = keys, values, positions
        else:
            index = kept.nonzero().reshape(-1)
            self.key, self.value = keys.index_select(-2, index), values.index_select(-2, index)
            self.positions = positions[index]
        return keys, values, positions

    def reset(self):
        self.key = self.value = self.positions = None
        self._seen = 0


class LinearAttentionState:
    """Linear attention's recurrent state for decoding: S (B, H, E, Ev) = sum phi(k) v^T and
    z (B, H, E) = sum phi(k) over the positions seen. Pass one per layer as `cache=`;
    `len()` is the number of positions seen."""

    def __init__(self):
        self.state = None  # (S, z), or None before the first token
        self._seen = 0

    def __len__(self):
        return self._seen

    def advance(self, state, tokens):
        self.state, self._seen = state, self._seen + tokens

    def reset(self):
        self.state, self._seen = None, 0
