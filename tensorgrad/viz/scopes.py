"""Module paths as levels: the clusters of a drawing, and collapsing modules into one box each."""
import re

from .walk import Item


class Levels:
    """Module paths as levels: 'blocks.0.attn' -> ['blocks.0', 'attn'].

    A ModuleList (or ModuleDict) has no forward of its own, so its children are no level below
    it: `depth=1` shows `blocks.0`, `blocks.1` ... When the module classes are unknown, every
    numeric part is taken for a list index; when they are known, the children of a Sequential
    `mlp` stay one level below `mlp`.
    """

    def __init__(self, classes):
        self.lists = ({path for path, name in classes.items() if name in ("ModuleList",
                                                                          "ModuleDict")}
                      if classes else None)
        self.cache = {}

    def __call__(self, scope):
        levels = self.cache.get(scope)
        if levels is None:
            levels, prefix = [], ""
            for part in scope.split(".") if scope else ():
                is_item = part.isdigit() if self.lists is None else prefix in self.lists
                if is_item and levels:
                    levels[-1] += "." + part
                else:
                    levels.append(part)
                prefix = f"{prefix}.{part}" if prefix else part
            self.cache[scope] = levels
        return levels

    def parent(self, path):
        return ".".join(self(path)[:-1])

    def common(self, a, b):
        """The innermost module path holding both scopes (None stands for 'no scope yet')."""
        if a is None:
            return b
        common = []
        for x, y in zip(self(a), self(b)):
            if x != y:
                break
            common.append(x)
        return ".".join(common)


def _closed_module(scope, levels, depth, expand):
    """The module box a scope collapses into, or None when it is drawn in full."""
    if depth is None:
        return None
    parts = levels(scope)
    for k in range(depth, len(parts) + 1):
        path = ".".join(parts[:k])
        if not any(path == e or path.startswith(e + ".") or e.startswith(path + ".")
                   for e in expand):
            return path
    return None


def collapse(items, edges, levels, depth, expand, summarize):
    """Fold every item inside a closed module into that module's box; edges follow, deduplicated."""
    boxes, where = {}, {}
    for key, item in items.items():
        path = _closed_module(item.scope, levels, depth, expand)
        where[key] = key if path is None else ("module", path)
        if path is not None:
            if path not in boxes:
                boxes[path] = Item("module", levels.parent(path), path)
            _absorb(boxes[path], item)
    if summarize:
        _summarize_repeats(boxes, where)
    drawn = {k: v for k, v in items.items() if where[k] == k}
    drawn.update((("module", path), box) for path, box in boxes.items())
    moved = ((where[a], where[b]) for a, b in edges)
    return drawn, list(dict.fromkeys((a, b) for a, b in moved if a != b))


def _absorb(box, item):
    box.ops += item.ops
    box.numel += item.numel
    box.nbytes += item.nbytes
    box.steps += item.steps
    box.bad = box.bad or item.bad
    box.root = box.root or item.root


def _summarize_repeats(boxes, where):
    """blocks.0 ... blocks.11 -> blocks.0, one box 'blocks.1 … blocks.10 (×10)', blocks.11."""
    runs = {}
    for path in boxes:
        match = re.fullmatch(r"(.*)\.(\d+)", path)
        if match:
            runs.setdefault(match.group(1), []).append((int(match.group(2)), path))
    for run in runs.values():
        if len(run) < 3:
            continue
        middle = [path for _, path in sorted(run)[1:-1]]
        title = f"{middle[0]} … {middle[-1]} (×{len(middle)})"
        merged = Item("module", boxes[middle[0]].scope, title)
        for path in middle:
            _absorb(merged, boxes.pop(path))
        boxes[title] = merged
        for key, target in where.items():
            if target[0] == "module" and target[1] in middle:
                where[key] = ("module", title)
