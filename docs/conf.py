"""Sphinx configuration: markdown pages (MyST), tutorials executed by sphinx-gallery, and the API
reference from the docstrings (autodoc). `make -C docs html` builds it with warnings as
errors; nothing reaches the network."""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # an uninstalled checkout builds too
os.environ.setdefault("OMP_NUM_THREADS", "1")  # tutorials time the same on a loaded machine

project = "tensorgrad"
author = "the tensorgrad authors"
copyright = "the tensorgrad authors, MIT licence"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "tutorials"]  # sphinx-gallery reads tutorials/ itself
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links are checked like any other

autodoc_member_order = "bysource"
autodoc_docstring_signature = False  # a first line like "max(input) -> maximum" is prose
autodoc_typehints = "none"  # the docstrings give shapes and types in words
autodoc_default_options = {"members": True, "undoc-members": False}

sphinx_gallery_conf = {
    "examples_dirs": "tutorials",
    "gallery_dirs": "generated/tutorials",
    "filename_pattern": r"/\d\d_",  # run every numbered tutorial at build time
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "min_reported_time": 0,
    # two tutorials at a time, each in a joblib worker process: running them is most of the build
    "parallel": 2,
}

html_theme = "alabaster"
html_static_path = []
# the tutorials write their graph explorers (tg.viz.explore) here; they are served from the
# site's root, beside the pages that embed them
EXPLORERS = ROOT / "docs" / "generated" / "explore"
EXPLORERS.mkdir(parents=True, exist_ok=True)
html_extra_path = [str(EXPLORERS)]
html_theme_options = {"description": "autograd to RLHF, small enough to read",
                      "fixed_sidebar": True}
html_show_sourcelink = False


def _docstring_as_written(app, what, name, obj, options, lines):
    """The docstrings are plain text laid out by hand (aligned shapes, `name: meaning` lists),
    not reStructuredText: show them as written rather than reflow them."""
    if lines:
        lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", _docstring_as_written)
