"""Text for language-model examples, with nothing to download, and random training windows.

The default corpus is Python source that every machine running tensorgrad already has: the
standard library of the running interpreter.
"""
import os
import sysconfig

import tensorgrad as tg


# Well-known modules of ordinary code, in alphabetical order, present as single files from
# Python 3.9 on (pathlib and zipfile became packages later and are then skipped). Modules that
# are mostly data tables (locale, mimetypes, the encodings) would teach a small model to fill
# its lines with aligned strings rather than code.
STDLIB_MODULES = (
    "argparse", "ast", "base64", "bdb", "calendar", "cmd", "code", "codecs", "configparser",
    "contextlib", "copy", "dataclasses", "datetime", "difflib", "dis", "doctest", "enum",
    "filecmp", "fnmatch", "fractions", "ftplib", "functools", "getopt", "gettext", "glob", "gzip",
    "heapq", "hmac", "imaplib", "inspect", "ipaddress", "linecache", "numbers", "operator",
    "optparse", "pathlib", "pdb", "pickle", "pkgutil", "platform", "plistlib", "poplib", "pprint",
    "profile", "pstats", "queue", "random", "reprlib", "sched", "secrets", "selectors", "shlex",
    "shutil", "signal", "smtplib", "socket", "socketserver", "ssl", "statistics", "string",
    "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize", "trace",
    "traceback", "types", "typing", "uuid", "warnings", "weakref", "webbrowser", "zipapp",
    "zipfile",
)


def python_stdlib_corpus(max_chars=2_500_000):
    """Python source every machine has: the STDLIB_MODULES of the running interpreter's
    standard library, in that order, each after a `# file: name.py` line, concatenated and
    cut at max_chars characters (about 2.5 MB, from argparse.py into trace.py, on
    CPython 3.11).

    A fixed selection: the same interpreter always gives the same text. Another Python version
    has its own versions of these files.
    """
    stdlib = sysconfig.get_paths()["stdlib"]
    parts, size = [], 0
    for name in STDLIB_MODULES:
        path = os.path.join(stdlib, f"{name}.py")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            part = f"# file: {name}.py\n{f.read()}\n"
        parts.append(part)
        size += len(part)
        if size >= max_chars:
            break
    if not parts:
        raise FileNotFoundError(f"python_stdlib_corpus: none of the expected modules is in "
                                f"{stdlib}")
    return "".join(parts)[:max_chars]


def random_windows(ids, batch_size, block_size):
    """A batch of random training windows from a 1-d Tensor of token ids.

    Returns inputs (B, T) and targets (B, T), the same windows shifted by one token, drawn with
    tensorgrad's generator (seed it with tg.manual_seed for a reproducible batch).
    """
    if ids.ndim != 1 or ids.shape[0] <= block_size:
        raise ValueError(f"random_windows: need a 1-d Tensor of more than block_size="
                         f"{block_size} ids, got shape {ids.shape}")
    starts = tg.randint(0, ids.shape[0] - block_size, (batch_size,), device=ids.device)
    offsets = tg.arange(block_size + 1, device=ids.device)
    windows = ids[starts.unsqueeze(1) + offsets]  # (B, 1) + (T + 1,) -> (B, T + 1)
    return windows[:, :-1], windows[:, 1:]
