"""tensorgrad/ops/linear_attention.py: the causal chunked prefix sums equal the quadratic form
(tests/nn/test_attention_patterns_decoding.py checks that through the pattern) for any chunk
size; a call continued from a returned state equals one call; feature maps; errors."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.ops.linear_attention import linear_attention


def _quadratic(q, k, v, causal, phi, eps=1e-6):
    scores = phi(q) @ phi(k).mT
    scores = scores.tril() if causal else scores
    return (scores @ v) / (scores.sum(-1, keepdim=True) + eps)


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
@pytest.mark.parametrize("feature_map", ["elu", "relu"])
def test_causal_chunks_equal_the_quadratic_form(device, chunk, feature_map):
    q, k, v = (tg.randn(2, 3, 13, 4, dtype=tg.float64, device=device) for _ in range(3))
    phi = {"elu": lambda x: tg.nn.functional.elu(x) + 1, "relu": tg.relu}[feature_map]
    out = linear_attention(q, k, v, is_causal=True, feature_map=feature_map, chunk_size=chunk)
    np.testing.assert_allclose(out.detach().numpy(),
                               _quadratic(q, k, v, True, phi).detach().numpy(), atol=1e-9)


def test_gradients_to_second_order():
    q, k, v = (tg.randn(1, 1, 5, 2, dtype=tg.float64, requires_grad=True) for _ in range(3))
    assert tg.gradgradcheck(lambda a, b, c: linear_attention(a, b, c, True, chunk_size=2),
                            (q, k, v))


def test_a_call_continued_from_its_state_equals_one_call():
    q, k, v = (tg.randn(1, 2, 11, 4, dtype=tg.float64) for _ in range(3))
    whole, (S, z) = linear_attention(q, k, v, is_causal=True, return_state=True)
    first, state = linear_attention(q[..., :6, :], k[..., :6, :], v[..., :6, :], True,
                                    chunk_size=4, return_state=True)
    rest, (S2, z2) = linear_attention(q[..., 6:, :], k[..., 6:, :], v[..., 6:, :], True,
                                      state=state, return_state=True)
    np.testing.assert_allclose(tg.cat([first, rest], dim=-2).numpy(), whole.numpy(), atol=1e-12)
    np.testing.assert_allclose(S2.numpy(), S.numpy(), atol=1e-12)
    np.testing.assert_allclose(z2.numpy(), z.numpy(), atol=1e-12)
    assert S.shape == (1, 2, 4, 4) and z.shape == (1, 2, 4)


def test_a_callable_feature_map_and_bidirectional_form():
    q, k, v = (tg.randn(1, 1, 9, 4, dtype=tg.float64) for _ in range(3))
    out = linear_attention(q, k, v, feature_map=lambda x: x.exp())
    ref = tg.scaled_dot_product_attention(q, k, v, scale=1.0)  # exp(q) . exp(k) is not it...
    assert not np.allclose(out.numpy(), ref.numpy())  # ...the kernel is a different attention
    np.testing.assert_allclose(out.numpy(), _quadratic(q, k, v, False, tg.exp).numpy(),
                               atol=1e-12)


def test_errors_name_the_op():
    q = tg.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match="linear_attention: causal attention needs as many"):
        linear_attention(q, q[..., :3, :], q[..., :3, :], is_causal=True)
    with pytest.raises(ValueError, match="linear_attention: unknown feature_map 'tanh'"):
        linear_attention(q, q, q, feature_map="tanh")
    with pytest.raises(ValueError, match="enable_gqa=True"):
        linear_attention(q, q[:, :1], q[:, :1])
    with pytest.raises(TypeError, match="share a float dtype"):
        linear_attention(q, q.double(), q)
