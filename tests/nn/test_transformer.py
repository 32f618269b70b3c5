"""Transformer blocks: pre-/post-LN against torch.nn.TransformerEncoderLayer / DecoderLayer, a
GPT-2 block against Hugging Face's through the documented renaming, parameter counts, caching."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn.attention import KVCache
from tensorgrad.nn.positional import RotaryEmbedding
from tensorgrad.nn.transformer import DecoderBlock, EncoderBlock

TORCH_NAMES = {"self_attn.in_proj_weight": "self_attn.qkv_proj.weight",
               "self_attn.in_proj_bias": "self_attn.qkv_proj.bias",
               "multihead_attn.in_proj_weight": "cross_attn.qkv_proj.weight",
               "multihead_attn.in_proj_bias": "cross_attn.qkv_proj.bias",
               "multihead_attn.out_proj": "cross_attn.out_proj",
               "linear1": "ffn.up_proj", "linear2": "ffn.down_proj", "norm1": "attn_norm"}


def _load_torch(ours, theirs, decoder):
    names = dict(TORCH_NAMES, norm2="cross_attn_norm" if decoder else "ffn_norm",
                 norm3="ffn_norm")
    state = {}
    for name, value in theirs.state_dict().items():
        key = next((k for k in sorted(names, key=len, reverse=True)
                    if name == k or name.startswith(k + ".")), None)
        state[name if key is None else names[key] + name[len(key):]] = \
            tg.tensor(value.numpy())
    ours.load_state_dict(state)


def _np(t):
    return np.asarray(t.detach())


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_block_matches_torch(norm_first, activation):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, activation=activation,
                                              batch_first=True, norm_first=norm_first)
    ours = EncoderBlock(16, 4, 24, activation=activation, norm_first=norm_first)
    _load_torch(ours, theirs, decoder=False)
    x = np.random.default_rng(0).standard_normal((2, 5, 16)).astype(np.float32)
    padding = np.array([[False] * 5, [False] * 3 + [True] * 2])
    tx = torch.tensor(x, requires_grad=True)
    ref = theirs(tx, src_key_padding_mask=torch.tensor(padding))
    gx = tg.tensor(x, requires_grad=True)
    out = ours(gx, key_padding_mask=tg.tensor(padding))
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), atol=1e-5)
    ref.sum().backward()
    out.sum().backward()
    np.testing.assert_allclose(_np(gx.grad), tx.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_block_with_cross_attention_matches_torch(norm_first):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                              norm_first=norm_first, activation="gelu")
    ours = DecoderBlock(16, 2, 32, norm_first=norm_first, cross_attention=True)
    _load_torch(ours, theirs, decoder=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 16)).astype(np.float32)
    memory = rng.standard_normal((2, 6, 16)).astype(np.float32)
    memory_padding = np.zeros((2, 6), dtype=bool)
    memory_padding[0, -3:] = True
    ref = theirs(torch.tensor(x), torch.tensor(memory),
                 tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4),
                 tgt_is_causal=True, memory_key_padding_mask=torch.tensor(memory_padding))
    out = ours(tg.tensor(x), tg.tensor(memory),
               memory_key_padding_mask=tg.tensor(memory_padding))
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), atol=1e-5)


def test_gpt2_block_maps_from_hugging_face_by_renaming():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    config = transformers.GPT2Config(n_embd=32, n_head=4, resid_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = "sdpa"
    theirs = GPT2Block(config, layer_idx=0).eval()
    ours = DecoderBlock(32, 4, activation="gelu_tanh")  # GPT-2's "gelu_new"
    renames = {"ln_1": "attn_norm", "attn.c_attn": "self_attn.qkv_proj",
               "attn.c_proj": "self_attn.out_proj", "ln_2": "ffn_norm", "mlp.c_fc": "ffn.up_proj",
               "mlp.c_proj": "ffn.down_proj"}
    state = {}
    for name, value in theirs.state_dict().items():
        module, part = name.rsplit(".", 1)
        value = value.numpy()
        state[f"{renames[module]}.{part}"] = tg.tensor(value.T if value.ndim == 2 else value)
    ours.load_state_dict(state)  # strict: every parameter accounted for
    x = np.random.default_rng(2).standard_normal((2, 5, 32)).astype(np.float32)
    np.testing.assert_allclose(_np(ours(tg.tensor(x))), theirs(torch.tensor(x)).detach().numpy(),
                               atol=1e-5)


def test_gpt2_small_block_has_7087872_parameters():
    block = DecoderBlock(768, 12, 3072)
    assert block.num_parameters() == 7_087_872
    assert [n for n, _ in block.named_parameters()] == [
        "attn_norm.weight", "attn_norm.bias", "self_attn.qkv_proj.weight",
        "self_attn.qkv_proj.bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "ffn_norm.weight", "ffn_norm.bias", "ffn.up_proj.weight", "ffn.up_proj.bias",
        "ffn.down_proj.weight", "ffn.down_proj.bias"]


def test_llama_style_block_trains_and_caches():
    """RMSNorm, SwiGLU, no biases, grouped-query attention and rotary embeddings together."""
    block = DecoderBlock(32, 4, norm="rmsnorm", activation="swiglu", bias=False, n_kv_heads=2,
                         fused_qkv=False, rotary=RotaryEmbedding(8), norm_eps=1e-6)
    assert all("bias" not in name for name, _ in block.named_parameters())
    assert block.ffn.d_ff == 256
    x = tg.randn(2, 7, 32, requires_grad=True)
    out = block(x)
    assert out.shape == x.shape and out.dtype == tg.float32
    out.sum().backward()
    assert all(p.grad is not None for p in block.parameters())
    cache = KVCache()
    with tg.no_grad():
        steps = [block(x[:, :3], cache=cache)] + [block(x[:, t:t + 1], cache=cache)
                                                  for t in range(3, 7)]
    np.testing.assert_allclose(_np(tg.cat(steps, dim=1)), _np(out), atol=1e-5)


def test_encoder_decoder_block_caches_both_attentions():
    block = DecoderBlock(16, 2, cross_attention=True, norm_first=False).eval()
    x, memory = tg.randn(1, 5, 16), tg.randn(1, 3, 16)
    full = block(x, memory)
    cache, cross_cache = KVCache(), KVCache()
    steps = [block(x[:, t:t + 1], memory, cache=cache, cross_cache=cross_cache)
             for t in range(5)]
    np.testing.assert_allclose(_np(tg.cat(steps, dim=1)), _np(full), atol=1e-5)
    with pytest.raises(ValueError, match="needs memory"):
        block(x)


def test_residual_dropout_only_in_training():
    block = EncoderBlock(16, 2, dropout=0.5)
    x = tg.randn(2, 4, 16)
    assert not np.allclose(_np(block(x)), _np(block(x)))
    block.eval()
    np.testing.assert_array_equal(_np(block(x)), _np(block(x)))


def test_unknown_norm_is_a_clear_error():
    with pytest.raises(ValueError, match="'layernorm' or 'rmsnorm'"):
        EncoderBlock(8, 2, norm="batchnorm")
