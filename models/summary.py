"""The parameter table every model's `summary()` prints: one row per part of the model, its
shape in words and its parameter count, then the total. (`nn.Module.summary` gives the
per-module table instead.)"""


def parameter_table(rows, total):
    """Rows of (part, shape, count) and the total as an aligned text table."""
    rows = [(name, shape, f"{count:,}") for name, shape, count in rows]
    rows.append(("total", "", f"{total:,}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}"
                     for r in rows)
