"""Compiled scatter-add of rows: the gradient of an embedding lookup (NumpyBackend.scatter_add
calls it; benchmarks/: gpt_step)."""
import math

from .jit import flat, jit


@jit
def _scatter_rows_loop(target, rows, values):
    count = target.shape[0]
    for i in range(rows.size):
        r = rows[i]
        if r < 0:
            r += count
        if r < 0 or r >= count:
            raise IndexError("scatter_add: row index out of range")
        for j in range(values.shape[1]):
            target[r, j] += values[i, j]


def scatter_add_rows(target, rows, values):
    """target[rows] += values with repeated rows accumulated: rows an integer array indexing
    target's first dimension, values of shape rows.shape + target.shape[1:]. NumPy's add.at
    does the same several times slower (benchmarks/: the token embedding's gradient)."""
    cols = math.prod(target.shape[1:])
    _scatter_rows_loop(target.reshape(target.shape[0], cols), flat(rows),
                       flat(values).reshape(rows.size, cols))

