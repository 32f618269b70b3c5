"""generate_user's PyTorch-style GPT-mini decoding without a cache: each of the 256 steps runs
the whole sequence so far (16 to 271 tokens) through the model, tokens/s."""
from .generate_user import FRAMEWORKS, DEVICES, SIZES  # noqa: F401  (the workload's interface)
from . import generate_user

DESCRIPTION = "tokens/s, generate_user's model decoding without a cache"


def run(env):
    return generate_user.run(env, use_cache=False)
