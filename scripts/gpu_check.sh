#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU and CuPy: the cuda test suite, then tensorgrad
# against torch CUDA eager (gpt_step, attention at T=1024 and 4096, KV-cache decoding), as one
# table. Installs nothing but this checkout (pip install --no-deps -e .).
#
#   scripts/gpu_check.sh              # on the GPU machine
#   scripts/gpu_check.sh --standin    # dry run on the CPU through the CuPy stand-in (small sizes)
#
# PYTHON picks the interpreter (default: .venv/bin/python when present, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
if [ "${1:-}" != "--standin" ]; then
    "$PYTHON" -m pip install --no-deps -q -e .
fi
exec "$PYTHON" scripts/gpu_check.py "$@"
