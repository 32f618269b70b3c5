"""BERT against Hugging Face `transformers`: the encoder's outputs, every head's logits and loss,
parameter gradients, padding (including a row with no token), checkpoints both ways and the
legacy names; then sizes, presets, outputs and errors."""
import json

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import models

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB, LAYERS = 99, 2
HEADS = ["BertModel", "BertForMaskedLM", "BertForPreTraining", "BertForNextSentencePrediction",
         "BertForSequenceClassification", "BertForTokenClassification",
         "BertForQuestionAnswering"]


def _hf_config(**overrides):
    return transformers.BertConfig(**{
        "vocab_size": VOCAB, "hidden_size": 32, "num_hidden_layers": LAYERS,
        "num_attention_heads": 4, "intermediate_size": 37, "max_position_embeddings": 24,
        "layer_norm_eps": 1e-7, "num_labels": 3, "attn_implementation": "eager", **overrides})


def _randomise(hf):
    """Every bias and norm weight away from 0 and 1, and every matrix perturbed, so that a
    swapped or dropped parameter changes the outputs."""
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.normal_(0.0, 0.5)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    return hf.eval()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{class name: (folder, HF model)}: a small random HF model of each class, saved."""
    transformers.logging.set_verbosity_error()
    made = {}
    for i, name in enumerate(HEADS):
        torch.manual_seed(i)
        labels = 2 if name == "BertForQuestionAnswering" else 3  # a start and an end score
        hf = _randomise(getattr(transformers, name)(_hf_config(num_labels=labels)))
        path = tmp_path_factory.mktemp(name)
        hf.save_pretrained(path)
        made[name] = path, hf
    return made


def _batch(seed=0, full_pad_row=False):
    """ids (3, 10) with right padding (0 = [PAD]) on two rows, the mask, and segments A/B."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, (3, 10))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    if full_pad_row:
        mask[2] = 0
    ids[mask == 0] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _torch(batch):
    return {k: torch.from_numpy(v) for k, v in batch.items()}


def _tg(batch):
    return {k: tg.tensor(v) for k, v in batch.items()}


def _close(ours, theirs, what, atol=1e-4):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol,
                               rtol=1e-4, err_msg=what)


def test_encoder_outputs_match_transformers(checkpoints):
    path, hf = checkpoints["BertModel"]
    model = models.BertModel.from_pretrained(path)
    assert not model.training and model.config.layer_norm_eps == 1e-7
    batch = _batch()
    with torch.no_grad():
        expected = hf(**_torch(batch), output_hidden_states=True, output_attentions=True)
    with tg.no_grad():
        out = model(**_tg(batch), output_hidden_states=True, output_attentions=True)
    _close(out.last_hidden_state, expected.last_hidden_state, "last_hidden_state")
    _close(out.pooler_output, expected.pooler_output, "pooler_output")
    assert len(out.hidden_states) == len(expected.hidden_states) == LAYERS + 1
    for i, (a, b) in enumerate(zip(out.hidden_states, expected.hidden_states)):
        _close(a, b, f"hidden_states[{i}]")
    for i, (a, b) in enumerate(zip(out.attentions, expected.attentions)):
        assert a.shape == (3, 4, 10, 10)
        _close(a, b, f"attentions[{i}]")
    assert float(out.attentions[0][1, :, :, 6:].abs().max().item()) == 0.0  # padding unseen


def test_a_row_with_no_token_matches_the_default_attention(checkpoints):
    """A sequence that is all padding: HF's default (SDPA) attention gives such rows 0, as
    ours does; every other row is unaffected by it."""
    path, hf = checkpoints["BertModel"]
    model = models.BertModel.from_pretrained(path)
    batch = _batch(full_pad_row=True)
    hf.set_attn_implementation("sdpa")
    try:
        with torch.no_grad():
            expected = hf(**_torch(batch)).last_hidden_state
    finally:
        hf.set_attn_implementation("eager")
    with tg.no_grad():
        out = model(**_tg(batch)).last_hidden_state
    assert np.isfinite(out.numpy()).all()
    _close(out, expected, "last_hidden_state with an all-padding row")


def _labels(name, batch, seed=5):
    """The label arguments each HF class takes, with -100 at padding where they are per token."""
    rng = np.random.default_rng(seed)
    per_token = rng.integers(0, VOCAB, batch["input_ids"].shape)
    per_token[batch["attention_mask"] == 0] = -100
    per_token[0, ::2] = -100  # positions that were not masked
    return {"BertForMaskedLM": {"labels": per_token},
            "BertForPreTraining": {"labels": per_token,
                                   "next_sentence_label": np.array([0, 1, 1])},
            "BertForNextSentencePrediction": {"labels": np.array([1, 0, 1])},
            "BertForSequenceClassification": {"labels": np.array([2, 0, 1])},
            "BertForTokenClassification": {"labels": np.where(per_token >= 0, per_token % 3,
                                                              -100)},
            "BertForQuestionAnswering": {"start_positions": np.array([1, 4, 12]),
                                         "end_positions": np.array([3, 40, 2])}}[name]


@pytest.mark.parametrize("name", HEADS[1:])
def test_heads_match_transformers(checkpoints, name):
    """Each head's logits and loss; the QA spans include ones past the sequence (ignored)."""
    path, hf = checkpoints[name]
    model = getattr(models, name).from_pretrained(path)
    batch = {**_batch(seed=2), **_labels(name, _batch(seed=2))}
    with torch.no_grad():
        expected = hf(**_torch(batch))
    with tg.no_grad():
        out = model(**_tg(batch))
    assert out.keys() == [k for k in expected.keys()]
    for key in out.keys():
        _close(out[key], expected[key], f"{name}.{key}")


@pytest.mark.parametrize("problem", ["regression", "multi_label_classification"])
def test_sequence_classification_losses(tmp_path, problem):
    """num_labels=1 is regression (MSE), float labels over 3 labels are multi-label (BCE)."""
    torch.manual_seed(3)
    labels = 1 if problem == "regression" else 3
    hf = _randomise(transformers.BertForSequenceClassification(_hf_config(num_labels=labels)))
    hf.save_pretrained(tmp_path)
    model = models.BertForSequenceClassification.from_pretrained(tmp_path)
    y = np.random.default_rng(0).random((3,) if labels == 1 else (3, 3)).astype(np.float32)
    batch = {**_batch(), "labels": y}
    with torch.no_grad():
        expected = hf(**_torch(batch)).loss
    with tg.no_grad():
        loss = model(**_tg(batch)).loss
    assert loss.item() == pytest.approx(expected.item(), abs=1e-5)


def test_gradients_match_transformers(checkpoints):
    """Every parameter's gradient of the pre-training loss, matched by hf_parameter_names
    (through the tied decoder and the padding token's embedding row)."""
    path, hf = checkpoints["BertForPreTraining"]
    model = models.BertForPreTraining.from_pretrained(path)
    batch = {**_batch(seed=4), **_labels("BertForPreTraining", _batch(seed=4))}
    hf.zero_grad()
    hf(**_torch(batch)).loss.backward()
    model(**_tg(batch)).loss.backward()
    ours = dict(model.named_parameters())
    names = model.hf_parameter_names()
    theirs = dict(hf.named_parameters())
    assert set(names) == set(theirs)
    for hf_name, p in theirs.items():
        _close(ours[names[hf_name]].grad, p.grad, hf_name, atol=1e-5)


@pytest.mark.parametrize("name", HEADS)
def test_hf_parameter_names_are_the_transformers_ones(checkpoints, name):
    _, hf = checkpoints[name]
    model = getattr(models, name)(models.BertConfig.from_hf(hf.config.to_dict()))
    names = model.hf_parameter_names()
    assert set(names) == {n for n, _ in hf.named_parameters()}
    ours = dict(model.named_parameters())
    assert set(names.values()) == set(ours)
    for hf_name, p in hf.named_parameters():
        assert ours[names[hf_name]].shape == tuple(p.shape), hf_name


@pytest.mark.parametrize("name", ["BertModel", "BertForPreTraining", "BertForQuestionAnswering"])
def test_save_pretrained_loads_in_transformers(tmp_path, name):
    tg.manual_seed(1)
    config = models.BertConfig.bert_tiny(vocab_size=VOCAB, num_labels=2)
    model = getattr(models, name)(config).eval()
    with tg.no_grad():  # non-default biases and norms, so that a dropped one shows
        for p in model.parameters():
            if p.ndim == 1:
                p.copy_(tg.randn(*p.shape) * 0.5)
    model.save_pretrained(tmp_path)
    hf = getattr(transformers, name).from_pretrained(tmp_path).eval()
    batch = _batch(seed=6)
    with torch.no_grad():
        expected = hf(**_torch(batch))
    with tg.no_grad():
        out = model(**_tg(batch))
    for key in out.keys():
        _close(out[key], expected[key], f"{name}.{key}", atol=1e-5)
    again = getattr(models, name).from_pretrained(tmp_path)  # and back: every tensor identical
    for (key, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=key)


def _write(path, config, state):
    from safetensors.torch import save_file
    path.mkdir(exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in state.items()}, str(path / "model.safetensors"))


def test_legacy_names_load(checkpoints, tmp_path):
    """gamma/beta LayerNorms, no `bert.` prefix, no tied decoder weight but a decoder bias,
    and the old position_ids buffer: the same model."""
    path, hf = checkpoints["BertForMaskedLM"]
    legacy = {}
    for key, t in hf.state_dict().items():
        key = key.removeprefix("bert.").replace("LayerNorm.weight", "LayerNorm.gamma") \
            .replace("LayerNorm.bias", "LayerNorm.beta")
        if key == "cls.predictions.bias":
            key = "cls.predictions.decoder.bias"
        if key != "cls.predictions.decoder.weight":
            legacy[key] = t
    legacy["embeddings.position_ids"] = torch.arange(24)[None]
    _write(tmp_path / "legacy", hf.config.to_dict(), legacy)
    old = models.BertForMaskedLM.from_pretrained(tmp_path / "legacy")
    new = models.BertForMaskedLM.from_pretrained(path)
    for (key, a), b in zip(new.state_dict().items(), old.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=key)
    # A BertModel from a checkpoint with the prefix and another class's heads
    encoder = models.BertModel.from_pretrained(checkpoints["BertForPreTraining"][0])
    np.testing.assert_array_equal(encoder.pooler.dense.bias.detach().numpy(),
                                  checkpoints["BertForPreTraining"][1].bert.pooler.dense.bias
                                  .detach().numpy())


def test_a_head_on_a_pretrained_encoder(checkpoints):
    """The fine-tuning start: a classifier on a pre-training checkpoint keeps its fresh
    initialisation, with a warning that names it; the encoder is the checkpoint's."""
    path, hf = checkpoints["BertForPreTraining"]
    with pytest.warns(UserWarning, match=r"has no classifier\.weight, classifier\.bias"):
        model = models.BertForSequenceClassification.from_pretrained(path, num_labels=5)
    assert model.classifier.weight.shape == (5, 32)
    np.testing.assert_array_equal(model.bert.layers[1].ffn.up_proj.weight.detach().numpy(),
                                  hf.bert.encoder.layer[1].intermediate.dense.weight.detach()
                                  .numpy())


def test_from_pretrained_rejects_what_it_cannot_load(checkpoints, tmp_path):
    path, hf = checkpoints["BertModel"]
    config = hf.config.to_dict()
    _write(tmp_path / "a", {**config, "num_hidden_layers": 1}, hf.state_dict())
    with pytest.raises(ValueError, match=r"BERT of 1 layers.*unknown tensors \['encoder.layer.1"):
        models.BertModel.from_pretrained(tmp_path / "a")
    _write(tmp_path / "b", {**config, "num_hidden_layers": 3}, hf.state_dict())
    with pytest.raises(ValueError, match=r"missing \['encoder.layer.2"):
        models.BertModel.from_pretrained(tmp_path / "b")
    _write(tmp_path / "c", {**config, "is_decoder": True}, hf.state_dict())
    with pytest.raises(ValueError, match="unsupported BERT variant .*is_decoder=True"):
        models.BertModel.from_pretrained(tmp_path / "c")


# --- sizes, presets, outputs, errors --------------------------------------------------------------
def test_bert_base_parameter_count_and_summary():
    model = models.BertModel(models.BertConfig.bert_base())
    assert model.num_parameters() == 109_482_240
    summary = model.summary()
    for label, count in [("word embeddings", "23,440,896"), ("position embeddings", "393,216"),
                         ("token type embeddings", "1,536"), ("12 layers", "85,054,464"),
                         ("  per layer: attention ", "2,362,368"),
                         ("  per layer: intermediate", "4,722,432"), ("pooler", "590,592"),
                         ("total", "109,482,240")]:
        line = next(row for row in summary.splitlines() if row.startswith(label))
        assert line.split()[-1] == count, line


def test_presets_and_config_round_trip():
    sizes = {"bert-base": (12, 768, 12, 3072), "bert-large": (24, 1024, 16, 4096),
             "bert-small": (4, 512, 8, 2048), "bert-mini": (4, 256, 4, 1024),
             "bert-tiny": (2, 128, 2, 512)}
    for name, size in sizes.items():
        c = models.BertConfig.preset(name)
        assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads,
                c.intermediate_size) == size
    c = models.BertConfig.bert_mini(vocab_size=500, num_labels=7)
    assert models.BertConfig.from_hf(c.to_hf()) == c
    base = transformers.BertConfig().to_dict()
    assert models.BertConfig.from_hf(base) == models.BertConfig.bert_base()
    with pytest.raises(ValueError, match="unknown preset 'bert-huge'"):
        models.BertConfig.preset("bert-huge")
    with pytest.raises(ValueError, match="divisible by num_attention_heads"):
        models.BertConfig(hidden_size=100, num_attention_heads=3)
    with pytest.raises(ValueError, match="hidden_act 'tanh' is not supported"):
        models.BertConfig(hidden_act="tanh")


def test_initialisation():
    model = models.BertForPreTraining(models.BertConfig.bert_mini(vocab_size=2000))
    params = {name: p.detach().numpy() for name, p in model.named_parameters()}
    for name in ("bert.embeddings.word_embeddings.weight", "bert.layers.2.self_attn.k_proj.weight",
                 "nsp.weight", "mlm.dense.weight"):
        assert np.std(params[name]) == pytest.approx(0.02, rel=0.1), name
    assert not params["bert.embeddings.word_embeddings.weight"][0].any()  # [PAD]
    for name, p in params.items():
        if name.endswith("bias"):
            assert not p.any(), name
        if "norm" in name and name.endswith("weight"):
            assert (p == 1).all(), name


def test_output_objects_work_like_hugging_faces():
    model = models.BertForMaskedLM(models.BertConfig.bert_tiny(vocab_size=50)).eval()
    ids = tg.randint(1, 50, (2, 5))
    out = model(ids, labels=ids)
    assert out.logits is out["logits"] is out[1] and out.loss is out[0]
    loss, logits = out  # unpacking skips the fields that are None
    assert logits.shape == (2, 5, 50) and loss.ndim == 0
    assert model(ids).keys() == ["logits"]


def test_float64_and_inputs_embeds():
    model = models.BertModel(models.BertConfig.bert_tiny(vocab_size=50), dtype=tg.float64).eval()
    ids = tg.randint(1, 50, (2, 5))
    out = model(ids)
    assert out.last_hidden_state.dtype == tg.float64 == out.pooler_output.dtype
    embeds = model.embeddings.word_embeddings(ids)
    again = model(inputs_embeds=embeds)
    np.testing.assert_allclose(again.last_hidden_state.detach().numpy(),
                               out.last_hidden_state.detach().numpy())


def test_forward_errors():
    model = models.BertModel(models.BertConfig.bert_tiny(vocab_size=50, max_position_embeddings=8))
    ids = tg.zeros(2, 4, dtype=tg.int64)
    with pytest.raises(ValueError, match="exactly one of input_ids and inputs_embeds"):
        model()
    with pytest.raises(ValueError, match="integer ids"):
        model(tg.zeros(2, 4))
    with pytest.raises(ValueError, match="exceed max_position_embeddings=8"):
        model(tg.zeros(1, 9, dtype=tg.int64))
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(2, 4\)"):
        model(ids, attention_mask=tg.ones(2, 5, dtype=tg.int64))
    with pytest.raises(ValueError, match="token_type_ids must have shape"):
        model(ids, token_type_ids=tg.zeros(3, 4, dtype=tg.int64))


def test_an_attention_pattern_equals_dense_bert_with_its_mask():
    from tensorgrad.nn.attention_patterns import SlidingWindow

    pattern = SlidingWindow(window=2, global_tokens=1, block_size=4)
    config = models.BertConfig.bert_tiny(vocab_size=50, attention_probs_dropout_prob=0.0,
                                         hidden_dropout_prob=0.0)
    dense = models.BertModel(config, dtype=tg.float64).eval()
    sparse = models.BertModel(models.BertConfig.bert_tiny(
        vocab_size=50, attention=pattern), dtype=tg.float64).eval()
    sparse.load_state_dict(dense.state_dict())
    ids, lengths = tg.randint(1, 50, (2, 12)), tg.tensor([12, 9])
    padding = tg.arange(12).unsqueeze(0) < lengths.unsqueeze(1)  # (B, T) True at tokens
    mask = pattern.mask(12).unsqueeze(0) & padding.unsqueeze(1)  # (B, Tq, Tk)
    want = dense(ids, attention_mask=mask.long()).last_hidden_state
    got = sparse(ids, attention_mask=padding.long()).last_hidden_state
    np.testing.assert_allclose(got.detach().numpy()[1, :9], want.detach().numpy()[1, :9],
                               atol=1e-10)
    np.testing.assert_allclose(got.detach().numpy()[0], want.detach().numpy()[0], atol=1e-10)
    with pytest.raises(ValueError, match="only dense attention"):
        sparse.config.to_hf()
