"""Attention masks: causal and padding masks, and conversion between the bool and additive forms.

The conventions are those of `F.scaled_dot_product_attention`, used everywhere in tensorgrad.nn:
- a bool attention mask is True where a query MAY attend to a key;
- an additive mask is added to the scores: 0 where a query may attend, -inf where it may not
  (so a causal mask's upper triangle is -inf);
- a padding mask (B, T) is True at padding positions, which no query ever attends to. Hugging
  Face's `attention_mask` (1 = real token, 0 = padding) is its negation.
Attention masks broadcast against the scores (B, H, Tq, Tk).
"""
import tensorgrad as tg
from tensorgrad import Tensor


def causal_mask(query_len, key_len=None, device=None):
    """(Tq, Tk) bool mask, True where key j is not after query i.

    With key_len > query_len the queries are the LAST query_len positions (bottom-right
    alignment), which is what decoding with a KV cache needs: the newest query sees every key.
    For Tq == Tk this is the lower triangle, the same as `is_causal=True` (which PyTorch aligns
    top-left when the lengths differ).
    """
    key_len = query_len if key_len is None else key_len
    if query_len > key_len:
        raise ValueError(f"causal_mask: {query_len} queries cannot be the last positions of "
                         f"{key_len} keys; expected query_len <= key_len")
    rows = tg.arange(key_len - query_len, key_len, device=device).unsqueeze(-1)  # (Tq, 1)
    return tg.arange(key_len, device=device) <= rows  # (Tk,) vs (Tq, 1) -> (Tq, Tk)


def padding_mask(lengths, max_len=None, device=None):
    """(B, T) bool mask, True at padding, for sequences of the given lengths (a list or an
    integer Tensor of shape (B,)); T is max_len, or the longest length."""
    if not isinstance(lengths, Tensor):
        lengths = tg.tensor(list(lengths), dtype=tg.int64, device=device)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise TypeError(f"padding_mask: lengths must be integers of shape (B,), got "
                        f"{lengths.dtype} of shape {lengths.shape}")
    longest = int(lengths.max().item()) if lengths.numel() else 0
    max_len = longest if max_len is None else max_len
    if longest > max_len:
        raise ValueError(f"padding_mask: a length of {longest} does not fit max_len={max_len}")
    return tg.arange(max_len, device=lengths.device) >= lengths.unsqueeze(-1)  # (B, T)


def padding_mask_from_attention_mask(attention_mask):
    """Hugging Face's (B, T) attention_mask (1 = token, 0 = padding) as a padding mask."""
    return attention_mask == 0


def key_padding_mask(padding_mask):
    """A (B, Tk) padding mask as an attention mask (B, 1, 1, Tk) that hides the padded keys
    from every head and query. A bool mask flips to True = attend; a float one (additive,
    PyTorch's float key_padding_mask) is only reshaped."""
    if padding_mask.ndim != 2:
        raise ValueError(f"key_padding_mask: expected a (B, Tk) padding mask, got shape "
                         f"{padding_mask.shape}")
    mask = ~padding_mask if padding_mask.dtype.kind == "b" else padding_mask
    return mask.unsqueeze(1).unsqueeze(1)  # (B, Tk) -> (B, 1, 1, Tk)


def to_additive(mask, dtype=tg.float32):
    """A bool attention mask as an additive one: 0 where True, -inf where False."""
    if mask.dtype.kind != "b":
        raise TypeError(f"to_additive: expected a bool mask, got {mask.dtype}")
    return tg.where(mask, 0.0, float("-inf")).to(dtype)


def to_bool(mask):
    """An additive mask as a bool attention mask: True where the entry is above the dtype's
    lowest finite value (so -inf and Hugging Face's finfo(dtype).min both count as masked)."""
    if mask.dtype.kind != "f":
        raise TypeError(f"to_bool: expected a float (additive) mask, got {mask.dtype}")
    return mask > tg.finfo(mask.dtype).min


def merge_masks(*masks, dtype=tg.float32):
    """One attention mask that applies all of `masks` (None entries are skipped; None if none
    is left). Bool masks combine with AND; if any mask is additive, all become additive (of the
    given dtype) and add up, keeping any gradient the additive ones carry."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    if all(m.dtype.kind == "b" for m in masks):
        merged = masks[0]
        for m in masks[1:]:
            merged = merged & m
        return merged
    merged = None
    for m in masks:
        m = to_additive(m, dtype) if m.dtype.kind == "b" else m
        merged = m if merged is None else merged + m
    return merged
