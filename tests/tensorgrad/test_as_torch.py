"""tensorgrad.as_torch: `import torch` resolves to tensorgrad only when asked, and never behind
a real torch's back. Each case runs in a fresh interpreter, since installing changes imports."""
import os
import subprocess
import sys
import textwrap

import pytest

import tensorgrad as tg
from tensorgrad import as_torch


def run_python(code, *args, runner=False, cwd=None):
    """Run `code` (a script file under the runner, else with -c) and return its stdout."""
    if runner:
        command = [sys.executable, "-m", "tensorgrad.as_torch", *args]
    else:
        command = [sys.executable, "-c", textwrap.dedent(code), *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


SCRIPT = """\
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader
import torch.utils.checkpoint
import torch.backends.cudnn as cudnn
print(__name__, sys.argv[1:])
print(torch.__name__, nn.__name__, F.__name__, StepLR.__module__, DataLoader.__module__)
print(torch.utils.checkpoint.checkpoint.__module__, cudnn.__name__, torch.cuda.__name__)
"""
EXPECTED = ("tensorgrad tensorgrad.nn tensorgrad.nn.functional tensorgrad.nn.optim.lr_scheduler "
            "tensorgrad.utils.data.dataloader\n"
            "tensorgrad.utils.checkpoint tensorgrad.backends.cudnn tensorgrad.cuda\n")


def test_runner_runs_a_script_with_its_arguments(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    out = run_python(None, str(tmp_path / "script.py"), "--epochs", "3", runner=True)
    assert out == "__main__ ['--epochs', '3']\n" + EXPECTED


def test_runner_runs_a_module_as_python_m_does(tmp_path):
    (tmp_path / "mymodule.py").write_text(SCRIPT)
    out = run_python(None, "-m", "mymodule", "x", runner=True, cwd=tmp_path)
    assert out == "__main__ ['x']\n" + EXPECTED


def test_nothing_changes_unless_asked():
    out = run_python("""
        import sys, tensorgrad, tensorgrad.nn, tensorgrad.as_torch
        print('torch' in sys.modules, any(type(f).__name__ == 'TorchAliasFinder'
                                          for f in sys.meta_path))
    """)
    assert out == "False False\n"


def test_install_then_uninstall():
    out = run_python("""
        import sys, warnings
        warnings.simplefilter("ignore")
        import tensorgrad, tensorgrad.as_torch
        tensorgrad.as_torch.install()
        tensorgrad.as_torch.install()  # twice is once
        import torch.nn.utils.rnn
        print(torch is tensorgrad, torch.nn.utils.rnn is tensorgrad.nn.utils.rnn)
        tensorgrad.as_torch.uninstall()
        print([name for name in sys.modules if name.split('.')[0] == 'torch'])
    """)
    assert out == "True True\n[]\n"


def test_install_refuses_when_a_real_torch_is_imported():
    out = run_python("""
        import sys, types
        sys.modules["torch"] = types.ModuleType("torch")  # stands for a real, imported torch
        import tensorgrad.as_torch
        try:
            tensorgrad.as_torch.install()
        except RuntimeError as error:
            print("refused:", "already imported" in str(error))
        print(sys.modules["torch"].__name__)
    """)
    assert out == "refused: True\ntorch\n"


def test_install_says_when_it_shadows_an_installed_torch():
    pytest.importorskip("torch")  # then a real torch is installed, and install() says so
    out = run_python("""
        import warnings
        import tensorgrad.as_torch
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tensorgrad.as_torch.install()
        print([str(w.message).split(',')[0] for w in caught])
    """)
    assert out == "['tensorgrad.as_torch: `import torch` now gives tensorgrad']\n"


def test_an_uncovered_torch_module_names_what_is_covered():
    with pytest.raises(ModuleNotFoundError, match="torch.fx has no tensorgrad counterpart.*"
                                                  "torch.nn.functional"):
        as_torch.TorchAliasFinder().find_spec("torch.fx")
    assert as_torch.TorchAliasFinder().find_spec("numpy") is None


def test_every_covered_module_imports():
    import importlib
    for target in as_torch.TORCH_MODULES.values():
        importlib.import_module(target)


def test_cuda_answers_for_this_machine():
    count = tg.cuda.device_count()
    assert tg.cuda.is_available() == (count > 0) == tg.cuda_is_available()
    tg.cuda.manual_seed(0)  # safe without a GPU, as in torch
    tg.cuda.manual_seed_all(0)
    tg.cuda.empty_cache()
    if count == 0:
        for ask in (tg.cuda.current_device, tg.cuda.get_device_name, tg.cuda.synchronize,
                    tg.cuda.memory_allocated):
            with pytest.raises(RuntimeError, match="no GPU is available"):
                ask()
        return
    if os.environ.get("TENSORGRAD_CUDA_STANDIN") == "1":
        pytest.skip("the CuPy stand-in has no device properties or memory pool figures")
    assert tg.cuda.current_device() == 0
    assert tg.cuda.get_device_name() == tg.cuda.get_device_properties(0).name != ""
    with pytest.raises(RuntimeError, match="does not exist"):
        tg.cuda.get_device_name(count)
    before = tg.cuda.memory_allocated()
    x = tg.ones(1024, 1024, device="cuda")
    tg.cuda.synchronize()
    assert tg.cuda.memory_allocated() >= before + x.numel() * 4
    tg.cuda.manual_seed(3)
    a = tg.rand(4, device="cuda")
    tg.cuda.manual_seed(3)
    assert (tg.rand(4, device="cuda") == a).all()


def test_backends_flags():
    assert tg.backends.cudnn.is_available() is False  # tensorgrad never calls cuDNN
    assert tg.backends.mps.is_available() is False and tg.backends.mps.is_built() is False
    tg.backends.cudnn.benchmark = True
    try:
        assert tg.backends.cudnn.benchmark is True
    finally:
        tg.backends.cudnn.benchmark = False
