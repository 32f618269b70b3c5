"""Exceptions that code written for PyTorch can catch.

PyTorch reports an op's bad input (shapes that do not fit, an unknown mode) as a RuntimeError;
Python's habit is a ValueError. `OpError` is both, so `except RuntimeError` written for PyTorch
and `except ValueError` both catch it, and the message stays ours (the op, what it got, what it
expected).
"""


class OpError(ValueError, RuntimeError):
    """Bad input to an op, where PyTorch raises a RuntimeError."""


class OpIndexError(IndexError, RuntimeError):
    """An index out of range where PyTorch raises a RuntimeError (gather, scatter, index_add)
    or an IndexError (index_select, index_copy): both catch it."""
