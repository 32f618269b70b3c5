"""T5's pre-training objective, span corruption (Raffel et al., 2020, section 3.1.4): drop
random spans of a token sequence from the input, each replaced by one sentinel token, and make
the target the dropped spans, each after its sentinel.

    tokens:  Thank you for inviting me to your party last week .
    inputs:  Thank you <extra_id_0> me to your party <extra_id_1> week . </s>
    targets: <extra_id_0> for inviting <extra_id_1> last <extra_id_2> </s>

As in T5's `random_spans_noise_mask`: round(length * noise_density) noise tokens (at least 1,
at most length - 1) in round(noise / mean_noise_span_length) spans (at least 1); the noise and
the non-noise tokens are each cut into that many non-empty pieces uniformly at random, and the
pieces alternate, non-noise first. Sentinels count down from the end of the vocabulary:
<extra_id_0> = vocab_size - 1, <extra_id_1> = vocab_size - 2, ...
"""
import random


def _random_segmentation(num_items, num_segments, rng):
    """num_items split into num_segments positive lengths, every such split equally likely:
    num_segments - 1 cut points drawn without replacement among the num_items - 1 gaps."""
    cuts = sorted(rng.sample(range(1, num_items), num_segments - 1))
    bounds = [0] + cuts + [num_items]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def random_spans_noise_mask(length, noise_density=0.15, mean_noise_span_length=3.0, rng=None):
    """A list of `length` bools, True at the tokens to corrupt (see the module docstring).
    rng: a `random.Random` (default: a fresh unseeded one)."""
    rng = rng or random.Random()
    if length < 2:
        raise ValueError(f"random_spans_noise_mask: need at least 2 tokens, got {length}")
    num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
    num_spans = max(int(round(num_noise / mean_noise_span_length)), 1)
    num_spans = min(num_spans, num_noise, length - num_noise)  # every piece non-empty
    noise = _random_segmentation(num_noise, num_spans, rng)
    kept = _random_segmentation(length - num_noise, num_spans, rng)
    mask = []
    for keep_len, noise_len in zip(kept, noise):
        mask += [False] * keep_len + [True] * noise_len
    return mask


def _replace_spans(tokens, mask, sentinels):
    """tokens with each run of True in mask replaced by the next sentinel."""
    out, spans, previous = [], 0, False
    for token, masked in zip(tokens, mask):
        if masked and not previous:
            out.append(sentinels(spans))
            spans += 1
        elif not masked:
            out.append(token)
        previous = masked
    return out


def corrupt(tokens, mask, vocab_size, eos_token_id=1):
    """(inputs, targets) for a token list and its noise mask, in T5's format: the inputs keep
    the clean tokens with one sentinel per noise span, the targets keep the noise with one
    sentinel per clean span, and both end with eos_token_id (None: no EOS)."""
    if len(tokens) != len(mask):
        raise ValueError(f"corrupt: {len(tokens)} tokens but a mask of {len(mask)}")
    def sentinel(i):
        return vocab_size - 1 - i
    end = [] if eos_token_id is None else [eos_token_id]
    inputs = _replace_spans(tokens, mask, sentinel) + end
    targets = _replace_spans(tokens, [not m for m in mask], sentinel) + end
    return inputs, targets


def corrupted_lengths(length, noise_density=0.15, mean_noise_span_length=3.0):
    """(inputs length, targets length) span corruption makes of `length` tokens, EOS included:
    T5 picks the raw length so that the inputs come out at the model's input size."""
    num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
    num_spans = min(max(int(round(num_noise / mean_noise_span_length)), 1), num_noise,
                    length - num_noise)
    return length - num_noise + num_spans + 1, num_noise + num_spans + 1


class SpanCorruption:
    """A seeded span corrupter: `SpanCorruption(vocab_size, seed=0)(tokens)` -> (inputs,
    targets); successive calls draw new masks, the same seed gives the same sequence of them.

    vocab_size: the tokenizer's size; the sentinels are its last ids (a UnigramTokenizer's
    <extra_id_i> = vocab_size - 1 - i). eos_token_id: appended to both (T5: 1).
    """

    def __init__(self, vocab_size, noise_density=0.15, mean_noise_span_length=3.0,
                 eos_token_id=1, seed=None):
        self.vocab_size, self.eos_token_id = vocab_size, eos_token_id
        self.noise_density, self.mean_noise_span_length = noise_density, mean_noise_span_length
        self.rng = random.Random(seed)

    def __call__(self, tokens):
        tokens = list(tokens)
        mask = random_spans_noise_mask(len(tokens), self.noise_density,
                                       self.mean_noise_span_length, self.rng)
        return corrupt(tokens, mask, self.vocab_size, self.eos_token_id)
