"""`import tensorgrad as tg` gives tg.nn, tg.nn.functional, tg.optim and tg.models without
further imports (as torch.nn after `import torch`), yet loads none of them by itself."""
import subprocess
import sys

import pytest


def _run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_import_tensorgrad_alone_loads_no_layer_above_it():
    loaded = _run("import sys, tensorgrad\n"
                  "print(*[m for m in ('tensorgrad.nn', 'tensorgrad.nn.optim', "
                  "'tensorgrad.models') if m in sys.modules])")
    assert loaded == []


def test_the_layers_above_are_reachable_as_attributes():
    out = _run("import sys, tensorgrad as tg\n"
               "print(tg.nn is sys.modules['tensorgrad.nn'],\n"
               "      tg.optim is sys.modules['tensorgrad.nn.optim'] is tg.nn.optim,\n"
               "      tg.nn.functional is sys.modules['tensorgrad.nn.functional'],\n"
               "      tg.models is sys.modules['tensorgrad.models'],\n"
               "      tg.optim.AdamW.__name__, 'tensorgrad.nn' in sys.modules)")
    assert out == ["True", "True", "True", "True", "AdamW", "True"]


def test_torch_style_training_code_runs_against_tg_alone():
    out = _run("import tensorgrad as torch\n"
               "model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(),\n"
               "                            torch.nn.Linear(8, 1))\n"
               "opt = torch.optim.AdamW(model.parameters(), lr=0.05)\n"
               "x = torch.randn(64, 3)\n"
               "y = x.sum(-1, keepdim=True)\n"
               "for step in range(60):\n"
               "    loss = torch.nn.functional.mse_loss(model(x), y)\n"
               "    opt.zero_grad()\n"
               "    loss.backward()\n"
               "    opt.step()\n"
               "    first = loss.item() if step == 0 else first\n"
               "print(f'{first:.4f}', f'{loss:.4f}')")
    first, last = map(float, out)
    assert last < 0.1 * first


def test_unknown_attributes_still_raise():
    import tensorgrad as tg
    with pytest.raises(AttributeError, match="module 'tensorgrad' has no attribute 'nothing'"):
        tg.nothing  # noqa: B018
