"""
T5: span corruption, then greedy versus beam search
===================================================

T5 casts every task as text to text. Its pre-training objective, span corruption, replaces
spans of the input by sentinel tokens and asks the decoder to write the missing spans, each
after its sentinel. This tutorial shows the corruption on the paper's own sentence, then trains
a small T5 on a task whose answers can be checked (adding two numbers) and compares greedy
decoding with beam search.
"""
import random

import matplotlib.pyplot as plt

import tensorgrad as tg
from tensorgrad.models import T5Config, T5ForConditionalGeneration, UnigramTokenizer
from tensorgrad.models.span_corruption import SpanCorruption, corrupt

tg.manual_seed(0)

# %%
# Span corruption
# ---------------
# 15% of the tokens are dropped in spans of mean length 3. Each span becomes one sentinel in the
# input (``<extra_id_0>``, ``<extra_id_1>`` ..., the last ids of the vocabulary); the target
# lists the sentinels, each followed by what it replaced. The paper's example, with its mask:
sentence = "Thank you for inviting me to your party last week ."
words = sentence.split()
vocab = ["<pad>", "</s>", "<unk>"] + sorted(set(words)) + [f"<extra_id_{i}>" for i in (2, 1, 0)]
ids = [vocab.index(w) for w in words]
mask = [w in ("for", "inviting", "last") for w in words]
inputs, targets = corrupt(ids, mask, vocab_size=len(vocab))
print("input :", " ".join(vocab[i] for i in inputs))
print("target:", " ".join(vocab[i] for i in targets))

# %%
# On real text, with T5's tokenizer (a SentencePiece-style unigram model) and random spans:
import inspect, textwrap  # noqa: E401,E402

corpus = [line for line in inspect.getsource(textwrap).splitlines() if line.strip()]
tok = UnigramTokenizer.train(corpus, vocab_size=600)
noise = SpanCorruption(tok.vocab_size, seed=0)
pieces = tok.encode("Return a copy of the text with the whitespace normalised.")[:-1]
inputs, targets = noise(pieces)
print("input :", tok.decode(inputs))
print("target:", tok.decode(targets))
print(f"{len(pieces)} pieces -> input {len(inputs)}, target {len(targets)}: the encoder reads "
      "most of the text, the decoder writes only the gaps")

# %%
# A task with checkable answers
# -----------------------------
# ``"47+85"`` -> ``"132"``: digits are tokens 3-12, ``+`` is 13, ``</s>`` is 1 and ``<pad>`` 0
# (also the decoder's start token, as in T5).
DIGITS = "0123456789+"


def encode(text):
    return [3 + DIGITS.index(c) for c in text] + [1]


def decode(ids):
    return "".join(DIGITS[i - 3] for i in ids if i >= 3)


def example(rng):
    a, b = rng.randrange(100), rng.randrange(100)
    return f"{a}+{b}", str(a + b)


def batch(examples):
    src = [encode(s) for s, _ in examples]
    tgt = [encode(t) for _, t in examples]
    pad = lambda rows, fill: [r + [fill] * (max(map(len, rows)) - len(r)) for r in rows]  # noqa: E731
    src_ids = tg.tensor(pad(src, 0))
    return src_ids, (src_ids != 0).long(), tg.tensor(pad(tgt, -100))


config = T5Config.tiny(vocab_size=16, d_model=64, d_ff=128, num_layers=2, num_heads=4)
model = T5ForConditionalGeneration(config)
print(f"{model.num_parameters():,} parameters")
opt = tg.optim.AdamW(model.parameters(), lr=3e-3)
rng = random.Random(0)
test = [example(random.Random(10_000 + i)) for i in range(200)]
curve = []
for _ in range(800):
    src, mask, labels = batch([example(rng) for _ in range(64)])
    loss = model(src, mask, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    curve.append(loss.item())
plt.figure(figsize=(6, 2.5))
plt.plot(curve)
plt.xlabel("step")
plt.ylabel("train_loss")
plt.tight_layout()
plt.show()

# %%
# Greedy against beam search
# --------------------------
# Greedy decoding takes the likeliest token at each step and never revisits it. Beam search keeps
# the ``num_beams`` likeliest partial answers and returns the likeliest complete one, so it can
# recover when the best answer does not start with the likeliest first digit. The sequence
# log-probability of each answer, under the same model, shows what each search optimises.
src, mask, _ = batch(test)


def score(answers):
    """Sum of the model's log-probabilities of each answer (B,), of whatever length it came."""
    rows = [encode(a) for a in answers]
    labels = tg.tensor([row + [-100] * (max(map(len, rows)) - len(row)) for row in rows])
    with tg.no_grad():
        logp = model(src, mask, labels=labels).logits.log_softmax(-1)
    keep = labels != -100
    picked = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return (picked * keep).sum(-1)


results = {}
for beams in (1, 2, 4):
    out = model.generate(src, 5, attention_mask=mask, num_beams=beams)
    answers = [decode(row) for row in out.tolist()]
    exact = sum(a == t for a, (_, t) in zip(answers, test)) / len(test)
    results[beams] = (exact, score(answers).mean().item(), answers)
    print(f"num_beams={beams}: exact match {exact:.1%}, mean log p(answer) {results[beams][1]:.3f}")

greedy, beam = results[1][2], results[4][2]
changed = [(s, t, g, b) for (s, t), g, b in zip(test, greedy, beam) if g != b]
print(f"beam search changed {len(changed)} of {len(test)} answers; the first few "
      "(problem, truth, greedy, beam):")
for row in changed[:5]:
    print("  ", row)

# %%
# Beam search never finds a less likely answer than greedy (up to ties), but likelier is not
# always right: on a model that has learned the task well the two mostly agree, and beams help
# most where the model hesitates on the first digits, here the carries. For open-ended text
# the likeliest sequence is often dull and repetitive, which is why sampling
# (``do_sample=True, top_p=0.9``) is used there instead.
