"""Data with nothing to download, for the examples and tests (as torchvision.datasets is to torch).

text.py     the running interpreter's standard library as a corpus (source, or its docstrings
            and comments as English documents) and random training windows of a token stream
digits.py   scikit-learn's bundled handwritten digits, upsampled and split, and a random shift

`tensorgrad.models.data` and `tensorgrad.models.digits` name the same modules.
"""
