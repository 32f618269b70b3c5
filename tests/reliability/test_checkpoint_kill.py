"""`kill -9` during checkpoint saves: the file at the path is always a whole checkpoint (the
previous or the new one), and the next save removes the killed save's temporary file."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import tensorgrad as tg

_SAVER = textwrap.dedent("""
    import sys
    import tensorgrad as tg
    big = tg.zeros(2_000_000)  # 8 MB per checkpoint: a save takes long enough to be hit
    step = 0
    while True:
        step += 1
        with tg.no_grad():
            big.fill_(float(step))
        tg.save({"step": step, "big": big, "config": {"name": "soak"}}, sys.argv[1])
        print(step, flush=True)
""")


def _temporaries(folder):
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


def _kill_mid_save(path):
    """Start a process saving checkpoints in a loop; SIGKILL it once a save after the first is
    under way (its temporary file exists). True if the kill left that file behind, i.e. it
    landed mid-write."""
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline(), "the saving process died on its own"
        deadline = time.monotonic() + 30
        while not _temporaries(path.parent):
            assert time.monotonic() < deadline, "no save started within 30 s"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    return bool(_temporaries(path.parent))


def _check_survives_kills(tmp_path, kills):
    path = tmp_path / "ckpt.safetensors"
    landed = 0
    for _ in range(kills):
        landed += _kill_mid_save(path)
        ckpt = tg.load(path)  # the previous or the new checkpoint, whole
        assert ckpt["step"] >= 1 and ckpt["config"] == {"name": "soak"}
        assert ckpt["big"].shape == (2_000_000,)
        assert bool((ckpt["big"] == float(ckpt["step"])).all())
        # The next save to the same path clears what the killed one left.
        tg.save({"step": ckpt["step"], "big": ckpt["big"], "config": ckpt["config"]}, path)
        assert _temporaries(tmp_path) == [] and os.listdir(tmp_path) == [path.name]
    assert landed, "no kill landed during a write; the test proved nothing"
    return landed


def test_sigkill_during_save_leaves_a_loadable_checkpoint_and_no_temporaries(tmp_path):
    _check_survives_kills(tmp_path, kills=3)


@pytest.mark.slow
def test_thirty_sigkills_during_saves(tmp_path):
    assert _check_survives_kills(tmp_path, kills=30) >= 10
