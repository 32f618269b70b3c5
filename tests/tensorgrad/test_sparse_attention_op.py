"""tensorgrad/ops/sparse_attention.py: block_sparse_attention over an arbitrary gathered layout
equals dense attention with the mask that layout describes; merge_attention over disjoint key
sets equals attention over their union; bad layouts are clear errors."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.ops.sparse_attention import block_sparse_attention, merge_attention


def _random_layout(rng, T, nb, b, L, query_index=None):
    """key_index (nb, L) with repeats, and an `allowed` that keeps each (query, key) pair at
    most once; returns them and the (T, T) mask they amount to."""
    keys = rng.integers(0, T, size=(nb, L))
    allowed = rng.random((nb, b, L)) < 0.5
    queries = np.arange(nb * b).reshape(nb, b) if query_index is None else query_index
    mask = np.zeros((T, T), dtype=bool)
    for i in range(nb):
        for r in range(b):
            for j in range(L):
                qpos, kpos = queries[i, r], keys[i, j]
                if qpos >= T or mask[qpos, kpos]:
                    allowed[i, r, j] = False  # past the end, or a repeat
                elif allowed[i, r, j]:
                    mask[qpos, kpos] = True
    return tg.tensor(keys), tg.tensor(allowed), mask


@pytest.mark.parametrize("permuted", [False, True])
def test_equals_dense_attention_with_the_layouts_mask(device, permuted):
    rng = np.random.default_rng(0)
    T, nb, b, L = 10, 3, 4, 6
    query_index = None
    if permuted:  # a permutation of the queries, two empty slots (= T)
        query_index = np.concatenate([rng.permutation(T), [T, T]]).reshape(nb, b)
    key_index, allowed, mask = _random_layout(rng, T, nb, b, L, query_index)
    q, k, v = (tg.randn(2, 3, T, 5, dtype=tg.float64, device=device, requires_grad=True)
               for _ in range(3))
    out, lse = block_sparse_attention(
        q, k, v, key_index.to(device), allowed.to(device),
        None if query_index is None else tg.tensor(query_index, device=device))
    out = merge_attention((out, lse))
    ref = tg.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(mask, device=device))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    g = tg.randn(*out.shape, dtype=tg.float64, device=device)
    for a, r in zip(tg.grad((out * g).sum(), [q, k, v]), tg.grad((ref * g).sum(), [q, k, v])):
        np.testing.assert_allclose(a.numpy(), r.numpy(), atol=1e-12)
    live = mask.any(-1)  # the log-sum-exp of each query's allowed scores
    s = (q.detach().numpy() @ k.detach().numpy().swapaxes(-1, -2)) / np.sqrt(5)
    expected = np.log(np.where(mask, np.exp(s), 0).sum(-1))
    np.testing.assert_allclose(lse.detach().numpy()[..., 0][..., live], expected[..., live])


def test_merge_of_disjoint_parts_is_attention_over_the_union():
    rng = np.random.default_rng(1)
    T = 8
    q, k, v = (tg.randn(1, 2, T, 4, dtype=tg.float64, requires_grad=True) for _ in range(3))
    keys = tg.tensor(np.tile(np.arange(T), (1, 1)))
    split = rng.random((T, T)) < 0.5
    split[3] = False  # query 3 sees no key at all: it outputs 0
    first, second = split & (rng.random((T, T)) < 0.5), split.copy()
    second &= ~first
    parts = [block_sparse_attention(q, k, v, keys, tg.tensor(m[None])) for m in (first, second)]
    out = merge_attention(*parts)
    ref = tg.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(split))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    assert not out.detach().numpy()[:, :, 3].any()
    assert tg.gradcheck(lambda a, b, c: merge_attention(*[
        block_sparse_attention(a, b, c, keys, tg.tensor(m[None])) for m in (first, second)]),
        (q, k, v))


def test_second_order_gradients_with_alibi_and_gqa():
    T = 6
    q = tg.randn(1, 2, T, 3, dtype=tg.float64, requires_grad=True)
    k, v = (tg.randn(1, 1, T, 3, dtype=tg.float64, requires_grad=True) for _ in range(2))
    keys = tg.tensor([[0, 1, 2, 3], [2, 3, 4, 5]])
    allowed = tg.tensor(np.tril(np.ones((3, 4), dtype=bool), 1)[None].repeat(2, 0))
    slopes = tg.tensor([0.5, 0.25], dtype=tg.float64)

    def f(a, b, c):
        return block_sparse_attention(a, b, c, keys, allowed, alibi_slopes=slopes,
                                      enable_gqa=True)[0]
    assert tg.gradgradcheck(f, (q, k, v))


def test_bad_layouts_are_clear_errors():
    q = tg.randn(1, 1, 8, 4)
    keys = tg.tensor([[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="block_sparse_attention: allowed must be a bool"):
        block_sparse_attention(q, q, q, keys, tg.ones(2, 4, 3, dtype=tg.bool_))
    with pytest.raises(ValueError, match="do not cover 8 queries"):
        block_sparse_attention(q, q, q, keys, tg.ones(2, 3, 2, dtype=tg.bool_))
    with pytest.raises(ValueError, match="key_index must be an integer"):
        block_sparse_attention(q, q, q, keys.float(), tg.ones(2, 4, 2, dtype=tg.bool_))
    with pytest.raises(TypeError, match="share a float dtype"):
        block_sparse_attention(q, q.double(), q, keys, tg.ones(2, 4, 2, dtype=tg.bool_))
