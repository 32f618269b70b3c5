"""Benchmarks of tensorgrad against PyTorch eager and a hand-written NumPy floor.

`python benchmarks/run.py --quick` runs them all; see benchmarks/README.md.
"""
