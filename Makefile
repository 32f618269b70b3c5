# Two entry points for a fresh machine with python3, pip and make:
#   make demo   creates .venv, installs tensorgrad, trains a character-level GPT on the stdlib
#   make test   creates .venv, installs tensorgrad[dev], runs the test suite
#   make test-parity   also installs torch, transformers and peft, and runs the suite with them
#   make docs   builds the documentation site into docs/_build/html, running every tutorial
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-parity docs lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# one stamp per set of extras: make reinstalls when pyproject.toml changes
EXTRAS_examples := examples
EXTRAS_dev := dev,examples
EXTRAS_parity := dev,examples,parity
EXTRAS_docs := docs,examples

# setuptools notes at every editable install of a package_dir layout (tensorgrad.nn from nn/)
# that folders in the working directory named like the package may shadow it: here they are it
$(VENV)/.installed-%: pyproject.toml | $(PY)
	PYTHONWARNINGS="$${PYTHONWARNINGS:+$$PYTHONWARNINGS,}ignore:Editable installation" \
		$(PY) -m pip install -q -e ".[$(EXTRAS_$*)]"
	touch $@

demo: $(VENV)/.installed-examples
	$(PY) examples/train_gpt.py

# the suite on up to 4 processes (pytest-xdist), each taking the next test when it is free, which
# keeps both cores of a small machine busy; `make test PYTEST_XDIST=` runs it in one process
PYTEST_XDIST ?= -n auto --maxprocesses=4 --dist worksteal

test: $(VENV)/.installed-dev
	$(PY) -m pytest -q $(PYTEST_XDIST) $(PYTEST_ARGS)

test-parity: $(VENV)/.installed-parity
	$(PY) -m pytest -q $(PYTEST_XDIST) $(PYTEST_ARGS)

docs: $(VENV)/.installed-docs
	$(MAKE) -C docs html

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check tensorgrad nn models tests examples benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
