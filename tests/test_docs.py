"""Every ```python block in README.md and the docs' pages runs: a page's blocks run in order in
one namespace (a later block may use what an earlier one made), in a fresh process and working
folder. A page that needs an optional package or program says so in a comment,
`<!-- requires: mpi4py -->` or `<!-- requires: dot -->`, and skips without it."""
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if not {"_build", "generated"} & set(p.parts))
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
REQUIRES = re.compile(r"<!-- requires: ([\w, .-]+) -->")
PROGRAMS = {"dot": "Graphviz's `dot` program (apt-get install graphviz)"}  # not Python packages


def run_page(page):
    """Runs the page's python blocks; a failure's traceback names the page and the block's line."""
    text = page.read_text()
    namespace = {"__name__": "__docs__"}
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        exec(compile(match.group(1), f"{page.name}:{line}", "exec"), namespace)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(page, tmp_path):
    text = page.read_text()
    for names in REQUIRES.findall(text):
        for name in names.replace(",", " ").split():
            if name in PROGRAMS:
                if shutil.which(name) is None:
                    pytest.skip(f"{page.name} needs {PROGRAMS[name]}")
            else:
                pytest.importorskip(name, reason=f"{page.name} needs {name}")
    if not FENCE.search(text):
        pytest.skip(f"{page.name} has no python block")
    done = subprocess.run([sys.executable, __file__, str(page)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page.name}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def test_every_page_is_found():
    names = {p.name for p in PAGES}
    assert {"README.md", "index.md", "design.md", "performance.md"} <= names


if __name__ == "__main__":
    sys.path.remove(str(pathlib.Path(__file__).parent))  # tests/tensorgrad is not the package
    run_page(pathlib.Path(sys.argv[1]))
