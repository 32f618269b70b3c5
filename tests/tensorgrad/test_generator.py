"""tensorgrad.Generator and the generator= keyword of the random creation functions."""
import pytest

import tensorgrad as tg


def draws(g, device="cpu"):
    """One draw from every creation function that takes a generator, as plain lists."""
    return [tg.randn(2, 3, generator=g, device=device).tolist(),
            tg.rand(4, generator=g, device=device).tolist(),
            tg.randint(0, 100, (5,), generator=g, device=device).tolist(),
            tg.randperm(7, generator=g, device=device).tolist()]


def test_a_seeded_generator_repeats_its_stream(device):
    g = tg.Generator(device)
    first = draws(g.manual_seed(5), device)
    assert draws(g.manual_seed(5), device) == first
    assert draws(tg.Generator(device).manual_seed(5), device) == first  # same seed, same numbers
    assert draws(g.manual_seed(6), device) != first
    assert sorted(first[3]) == list(range(7))


def test_a_generator_leaves_the_global_stream_alone():
    tg.manual_seed(1)
    expected = tg.randn(4).tolist()
    tg.manual_seed(1)
    tg.randn(100, generator=tg.Generator().manual_seed(0))
    assert tg.randn(4).tolist() == expected


def test_dtypes_and_shapes_follow_the_arguments():
    g = tg.Generator()
    assert tg.randn(2, 3, generator=g).dtype == tg.float32
    assert tg.rand(3, dtype=tg.float64, generator=g).dtype == tg.float64
    ints = tg.randint(3, 9, (4, 2), generator=g)
    assert ints.shape == (4, 2) and ints.dtype == tg.int64
    assert ((ints >= 3) & (ints < 9)).all().item()
    assert tg.randperm(0, generator=g).shape == (0,)


def test_seeds_as_torch_reads_them():
    assert tg.Generator().initial_seed() == 67280421310721  # torch's default: fresh = reproducible
    assert draws(tg.Generator()) == draws(tg.Generator())
    g = tg.Generator()
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1
    seed = g.seed()
    assert g.initial_seed() == seed and 0 <= seed < 2**64
    first = draws(g)
    assert draws(g.manual_seed(seed)) == first
    assert g.device == "cpu" and "initial_seed=" in repr(g)


def test_bad_seeds_and_mismatched_generators():
    g = tg.Generator()
    with pytest.raises(TypeError, match="expected an int seed, got float"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match=r"outside \[-2\*\*63, 2\*\*64\)"):
        g.manual_seed(2**64)
    with pytest.raises(TypeError, match="randperm: generator must be a tensorgrad.Generator"):
        tg.randperm(3, generator=42)
    if tg.cuda_is_available():
        with pytest.raises(ValueError, match="randn: the generator is on cpu but the tensor is "
                                             "made on cuda:0"):
            tg.randn(3, generator=g, device="cuda")
