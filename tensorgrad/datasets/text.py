"""Text for language-model examples, with nothing to download, and random training windows.

The default corpus is Python source that every machine running tensorgrad already has: the
standard library of the running interpreter.
"""
import ast
import dataclasses
import os
import re
import sysconfig
import zlib

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


# --- English from the standard library: docstrings and comments as documents --------------------
# Packages with enough prose to tell apart (a few hundred docstrings each on CPython 3.11) that
# every CPython install has: `stdlib_documents(packages=PROSE_PACKAGES)` makes a classification
# task (which package is this docstring from?) with labels nobody had to write.
PROSE_PACKAGES = ("asyncio", "email", "http", "importlib", "logging", "multiprocessing",
                  "unittest", "xml")


@dataclasses.dataclass
class Document:
    """One docstring or one block of consecutive comment lines of the standard library."""
    source: str  # the file, relative to the standard library: "asyncio/events.py"
    package: str  # its top-level package or module: "asyncio", "argparse"
    kind: str  # "docstring" or "comment"
    text: str  # whitespace collapsed, doctest examples dropped
    sentences: list  # `split_sentences(text)`


def _stdlib_files(packages):
    """(relative path, top-level name) of the standard library's own .py files, sorted;
    test suites, site-packages and vendored code are left out."""
    root = sysconfig.get_paths()["stdlib"]
    skip = {"test", "tests", "site-packages", "idle_test", "__pycache__", "lib2to3_tests"}
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("config-"))
        for name in files:
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            top = rel.split("/")[0].removesuffix(".py")
            if packages is None or top in packages:
                found.append((rel, top))
    return root, sorted(found)


def _prose(text):
    """Docstring or comment text as prose: doctest blocks (from a >>> line to the next blank
    line) dropped, paragraphs kept apart by a blank line, other whitespace collapsed."""
    paragraphs, current, in_example = [], [], False
    for line in text.splitlines():
        line = line.strip()
        in_example = (in_example or line.startswith(">>>")) and bool(line)
        if not line or in_example:
            if current:
                paragraphs.append(" ".join(current))
            current = []
        else:
            current.append(line)
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")


def split_sentences(text, min_words=3):
    """Sentences of prose: a paragraph break, or '.', '!' or '?' before a capital, ends one;
    pieces of fewer than min_words words (headings, lone names) are dropped."""
    sentences = []
    for paragraph in text.split("\n\n"):
        for piece in _SENTENCE_END.split(paragraph.strip()):
            if len(piece.split()) >= min_words:
                sentences.append(piece)
    return sentences


def _docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                yield doc


def _comment_blocks(source):
    """The text of whole-line comments, consecutive lines joined into one block; shebangs,
    encoding lines and tool directives (noqa, type:, pragma) are not prose. Lines are read as
    text, not tokens (tokenize is ten times slower), so a '#' line inside a string counts."""
    blocks, block = [], []
    for line in source.splitlines():
        line = line.strip()
        text = line[1:].lstrip("#").strip() if line.startswith("#") else None
        if text is None or text.startswith(("!", "-*-", "noqa", "type:", "pragma", "fmt:")):
            if block:
                blocks.append("\n".join(block))
            block = []
        elif text:
            block.append(text)
    if block:
        blocks.append("\n".join(block))
    return blocks


def stdlib_documents(packages=None, kinds=("docstring", "comment"), min_chars=40):
    """English that every machine running tensorgrad has: the docstrings (of modules, classes
    and functions) and the comment blocks of the running interpreter's standard library, as
    Documents with their sentences, in file order. packages: top-level names to read (e.g.
    PROSE_PACKAGES), or None for the whole library (about 900 files and 20,000 documents on
    CPython 3.11; a few seconds). Texts shorter than min_chars are left out."""
    root, files = _stdlib_files(None if packages is None else set(packages))
    documents = []
    for rel, top in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            source = f.read()
        texts = []
        if "docstring" in kinds:
            try:
                texts += [("docstring", doc) for doc in _docstrings(ast.parse(source))]
            except (SyntaxError, ValueError):  # a file for another Python (lib2to3 fixtures)
                pass
        if "comment" in kinds:
            texts += [("comment", block) for block in _comment_blocks(source)]
        for kind, text in texts:
            text = _prose(text)
            if len(text) >= min_chars:
                documents.append(Document(rel, top, kind, text, split_sentences(text)))
    if not documents:
        raise FileNotFoundError(f"stdlib_documents: no documents of {packages or 'any package'} "
                                f"in {root}")
    return documents


def is_held_out(source, fraction=0.1):
    """Whether a file belongs to the held-out split: a fixed hash of its name, so every
    example that uses this corpus holds out the same files."""
    return zlib.crc32(source.encode()) % 1000 < fraction * 1000
