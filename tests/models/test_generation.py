"""Generation: the sampling filters, determinism under a seed, the KV cache (same tokens as
without it), left-padded batches, stop tokens."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models import GPT, GPTConfig, generate
from tensorgrad.models.decoding import next_token, sample, top_k_filter, top_p_filter
from tensorgrad.models.generation import pad_prompts, positions_from_mask


@pytest.fixture
def model():
    return GPT(GPTConfig.tiny(n_embd=32)).eval()


# --- choosing the next token ---------------------------------------------------------------------
def test_top_k_keeps_the_k_largest():
    logits = tg.tensor([[1.0, 5.0, 3.0, 4.0, 2.0], [0.0, -1.0, 2.0, 1.0, 3.0]])
    kept = np.isfinite(top_k_filter(logits, 2).numpy())
    assert kept.tolist() == [[False, True, False, True, False], [False, False, True, False, True]]
    assert top_k_filter(logits, 10) is logits
    with pytest.raises(ValueError, match="positive integer"):
        top_k_filter(logits, 0)


def test_top_p_keeps_the_nucleus():
    probs = np.array([[0.5, 0.3, 0.15, 0.05], [0.05, 0.9, 0.03, 0.02]])
    logits = tg.tensor(np.log(probs).astype(np.float32))
    # 0.5 + 0.3 >= 0.7: two tokens; 0.9 alone passes 0.7
    kept = np.isfinite(top_p_filter(logits, 0.7).numpy())
    assert kept.tolist() == [[True, True, False, False], [False, True, False, False]]
    assert np.isfinite(top_p_filter(logits, 1.0).numpy()).all()
    assert np.isfinite(top_p_filter(logits, 1e-6).numpy()).sum(1).tolist() == [1, 1]
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\]"):
        top_p_filter(logits, 1.5)


def test_sample_follows_the_probabilities():
    probs = tg.tensor([[0.1, 0.0, 0.6, 0.3]] * 20000)
    draws = sample(probs).numpy()
    counts = np.bincount(draws, minlength=4) / len(draws)
    assert counts[1] == 0  # a zero-probability token is never drawn
    np.testing.assert_allclose(counts, [0.1, 0.0, 0.6, 0.3], atol=0.015)


def test_next_token_greedy_and_seeded_sampling():
    logits = tg.randn(4, 50)
    assert next_token(logits, temperature=0).tolist() == logits.argmax(-1).tolist()
    assert next_token(logits, top_k=1).tolist() == logits.argmax(-1).tolist()
    tg.manual_seed(3)
    first = next_token(logits, temperature=0.8, top_p=0.9)
    tg.manual_seed(3)
    assert next_token(logits, temperature=0.8, top_p=0.9).tolist() == first.tolist()
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        next_token(logits, temperature=-1)


def test_pad_prompts_left_pads_and_positions_skip_padding():
    ids, mask = pad_prompts([[5, 6, 7], [8]], pad_token_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert positions_from_mask(mask).tolist() == [[0, 1, 2], [0, 0, 0]]
    with pytest.raises(ValueError, match="non-empty prompts"):
        pad_prompts([[1], []])


# --- the loop -------------------------------------------------------------------------------------
def test_cached_forward_matches_full_forward(model):
    ids = tg.randint(0, 64, (2, 10))
    with tg.no_grad():
        full, _ = model(ids)
        cache = model.make_cache()
        first, _ = model(ids[:, :6], cache=cache)
        rest = [model(ids[:, t:t + 1], cache=cache)[0] for t in range(6, 10)]
    stepped = tg.cat([first] + rest, dim=1)
    np.testing.assert_allclose(stepped.numpy(), full.numpy(), atol=1e-5)


@pytest.mark.parametrize("options", [dict(temperature=0), dict(temperature=1.0, top_k=10),
                                     dict(temperature=0.9, top_p=0.8)])
def test_cached_and_uncached_generation_give_the_same_tokens(device, options):
    model = GPT(GPTConfig.tiny(n_embd=32), device=device).eval()
    prompt = tg.randint(0, 64, (2, 5), device=device)
    # 40 new tokens run past block_size=32, where the context starts to slide
    cached = generate(model, prompt, 40, seed=7, use_cache=True, **options)
    uncached = generate(model, prompt, 40, seed=7, use_cache=False, **options)
    assert cached.shape == (2, 45)
    assert cached.tolist() == uncached.tolist()
    assert cached[:, :5].tolist() == prompt.tolist()


def test_seed_makes_sampling_reproducible(model):
    prompt = tg.randint(0, 64, (3, 4))
    a = model.generate(prompt, 12, seed=1)
    b = model.generate(prompt, 12, seed=1)
    c = model.generate(prompt, 12, seed=2)
    assert a.tolist() == b.tolist()
    assert a.tolist() != c.tolist()


@pytest.mark.parametrize("use_cache", [True, False])
def test_left_padded_batch_matches_each_prompt_alone(model, use_cache):
    prompts = [[3, 14, 15, 9, 2, 6], [5, 3], [58, 9, 7]]
    ids, mask = pad_prompts(prompts, pad_token_id=0)
    batch = generate(model, ids, 8, temperature=0, attention_mask=mask, use_cache=use_cache)
    for row, prompt in zip(batch.tolist(), prompts):
        alone = generate(model, tg.tensor([prompt]), 8, temperature=0, use_cache=use_cache)
        assert row[-8:] == alone.tolist()[0][-8:]


def test_eos_tokens_end_rows_and_generation(model):
    prompt = tg.tensor([[1, 2, 3], [4, 5, 6]])
    free = generate(model, prompt, 6, temperature=0).tolist()
    stop = free[0][3]  # row 0's first new token
    out = generate(model, prompt, 6, temperature=0, eos_token_id=stop, pad_token_id=63).tolist()
    assert out[0][3] == stop and set(out[0][4:]) <= {63}
    if stop not in free[1][3:]:
        assert out[1] == free[1]
    both = generate(model, prompt[:1], 6, temperature=0, eos_token_id=[stop])
    assert both.shape == (1, 4)  # every row stopped: generation ends early


def test_generate_runs_without_grad_and_restores_the_mode(model):
    model.train()
    out = generate(model, tg.tensor([[1, 2]]), 3)
    assert not out.requires_grad and out.dtype == tg.int64
    assert model.training
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(ValueError, match=r"input_ids must be \(B, T\) integer ids"):
        generate(model, tg.tensor([1, 2]), 3)
    with pytest.raises(ValueError, match="attention_mask of shape"):
        generate(model, tg.tensor([[1, 2]]), 3, attention_mask=tg.tensor([[1]]))


# --- beam search for decoder-only models --------------------------------------------------------
@pytest.fixture(scope="module")
def gpt_pair(tmp_path_factory):
    """(transformers GPT-2, ours loaded from it); a scaled-up embedding makes the next-token
    distributions peaked, and token 7 (the end of sequence here) likely enough that some
    hypotheses finish early."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=48, n_positions=32, n_embd=32, n_layer=2, n_head=4)).eval()
    with torch.no_grad():
        hf.transformer.wte.weight *= 2.5
        hf.transformer.wte.weight[7] *= 2.5  # some beams end (a random GPT-2 likes repeating)
    path = tmp_path_factory.mktemp("gpt2-beams")
    hf.save_pretrained(path)
    return hf, GPT.from_pretrained(path)


@pytest.mark.parametrize("options", [
    dict(), dict(no_repeat_ngram_size=2), dict(repetition_penalty=2.0),
    dict(repetition_penalty=1.5, no_repeat_ngram_size=3), dict(eos_token_id=[7, 11]),
    dict(num_beams=3), dict(num_beams=4, num_return_sequences=2, length_penalty=0.5),
    dict(num_beams=3, no_repeat_ngram_size=2, early_stopping=True),
    dict(num_beams=3, repetition_penalty=1.4),
    dict(num_beams=2, repetition_penalty=0.8, no_repeat_ngram_size=2),
])
def test_gpt2_gives_transformers_tokens(gpt_pair, options):
    """Greedy and beam search, with the n-gram and repetition rules, token for token."""
    import torch
    hf, ours = gpt_pair
    prompts = [[5, 17, 33], [21, 2, 40]]
    options = dict(dict(eos_token_id=7, pad_token_id=7), **options)
    with torch.no_grad():
        expected = hf.generate(torch.tensor(prompts), max_new_tokens=10, do_sample=False,
                               **options).tolist()
    got = ours.generate(tg.tensor(prompts), 10, do_sample=False, **options)
    uncached = ours.generate(tg.tensor(prompts), 10, do_sample=False, use_cache=False, **options)
    eos = options["eos_token_id"]
    eos = {eos} if isinstance(eos, int) else set(eos)

    def cut(rows):  # up to the first end of sequence after the prompt
        out = []
        for r in rows:
            ends = [i for i in range(3, len(r)) if r[i] in eos]
            out.append(r[:ends[0] + 1] if ends else r)
        return out
    assert cut(got.tolist()) == cut(expected)
    assert got.tolist() == uncached.tolist()


# --- the arguments: nanoGPT's and transformers' ---------------------------------------------------
def test_nanogpt_positional_call_samples_and_temperature_zero_is_greedy(model):
    prompt = tg.tensor([[3, 1, 4]])
    tg.manual_seed(5)
    positional = model.generate(prompt, 6, 0.8, 3)  # (idx, max_new_tokens, temperature, top_k)
    keyword = model.generate(prompt, 6, temperature=0.8, top_k=3, seed=5)
    assert positional.tolist() == keyword.tolist()
    greedy = model.generate(prompt, 6, temperature=0)
    assert greedy.tolist() == model.generate(prompt, 6, do_sample=False).tolist()
    assert greedy.tolist() == generate(model, prompt, 6).tolist()  # the function's default: greedy


def test_no_repeat_ngram_size_holds_in_greedy_decoding(model):
    prompt = tg.tensor([[40, 40, 3], [9, 8, 9]])
    out = model.generate(prompt, 12, temperature=0, no_repeat_ngram_size=2).tolist()
    for row in out:
        bigrams = list(zip(row, row[1:]))
        assert len(bigrams) == len(set(bigrams)), row


def test_sampling_returns_several_sequences_per_prompt(model):
    prompt = tg.tensor([[3, 1, 4], [1, 5, 9]])
    a = model.generate(prompt, 5, num_return_sequences=3, seed=2)
    assert a.shape == (6, 8)
    assert a[:3, :3].tolist() == [[3, 1, 4]] * 3 and a[3:, :3].tolist() == [[1, 5, 9]] * 3
    assert a.tolist() == model.generate(prompt, 5, num_return_sequences=3, seed=2).tolist()


@pytest.mark.parametrize("options, message", [
    (dict(do_sample=False, temperature=0.7), "temperature=0.7 only apply when sampling"),
    (dict(temperature=0, top_k=5), "top_k=5 only apply when sampling"),
    (dict(num_beams=3, temperature=0.5), "this is beam search"),
    (dict(do_sample=True, temperature=0), "sampling needs a temperature > 0"),
    (dict(do_sample=True, num_beams=2), "beam search does not sample"),
    (dict(temperature=0, num_return_sequences=2), "greedy decoding returns one sequence"),
    (dict(num_beams=2, num_return_sequences=3), "at most num_beams=2"),
    (dict(decoder_start_token_id=0), "decoder_start_token_id is for encoder-decoder"),
    (dict(temperature=0, repetition_penalty=0.0), "repetition_penalty must be a positive"),
    (dict(num_beams=2, max_new_tokens=40), "within max_positions=32"),
])
def test_arguments_that_would_not_apply_are_errors(model, options, message):
    options = dict(dict(max_new_tokens=3), **options)
    with pytest.raises(ValueError, match=message):
        model.generate(tg.tensor([[1, 2]]), **options)
    with pytest.raises(TypeError):
        model.generate(tg.tensor([[1, 2]]), 3, max_length=9)  # not an argument here
