"""Small text helpers for labels: numbers, values, sizes, natural sort order."""
import re


def format_values(t):
    values = t._backend.to_host(t.data).ravel().tolist()
    text = [number(v) for v in values]
    return text[0] if t.data.ndim == 0 or len(text) == 1 else "[" + ", ".join(text) + "]"


def number(v):
    """4 significant digits; a float keeps a decimal point (2.0, not 2)."""
    if not isinstance(v, float):
        return str(v)
    text = f"{v:.4g}"
    return text if any(c in text for c in ".enai") else text + ".0"


def natural_order(path):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def count(n):
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def size_in_bytes(n):
    for unit, size in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
