"""Sphinx configuration of fastmv's documentation site.

Build: ``pip install -e '.[docs]' && sphinx-build -W -b html docs docs/_build/html`` (see
the README). Narrative pages are the Markdown files of this folder (myst-parser), the API
reference is generated from the numpydoc docstrings, and the gallery runs every script of
``docs/examples`` (sphinx-gallery) so that its pictures are made by the build.
"""
import os
import re
import sys
import sysconfig
import tempfile

import matplotlib

matplotlib.use("Agg")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # a source checkout builds without installing

import fastmv  # noqa: E402

project = "fastmv"
author = "the fastmv developers"
copyright = "the fastmv developers"
release = version = fastmv.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# records/ holds the contributors' measurement logs: kept in the repository (linked from
# architecture.md), not part of the user's guide
exclude_patterns = ["_build", "examples", "records", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
# Docstrings write set sizes as |Ω|, which reStructuredText reads as a substitution.
rst_prolog = "\n".join(f".. |{s}| replace:: \\|{s}\\|" for s in ("Ω", "Ω_v", "Ω_a", "θ_1"))

autosummary_generate = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc's sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()  # .ci/check_docstrings.py validates the docstrings

myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "show_memory": False,
}

html_theme = "alabaster"
html_title = f"fastmv {release}"
html_static_path = []
html_theme_options = {"description": "fast multi-view clustering", "fixed_sidebar": True,
                      "page_width": "1240px", "sidebar_width": "250px"}


# ------------------------------------------------------------------ no build-machine paths
# The gallery's pages show what the examples print and warn; a warning's location or a
# temporary file's name would show the build machine's folders. Every page's source (the
# gallery's generated ones included) is checked for them; under -W a finding fails the build.
# (the interpreter's library folders rather than its prefix: a system Python's is /usr)
_MACHINE_PATHS = re.compile("|".join(
    [re.escape(p.rstrip("/") + "/") for p in {
        os.path.dirname(HERE), os.path.expanduser("~"),
        *(sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib"))}
     if len(p) > 1]
    + [re.escape(tempfile.gettempdir()) + r"/tmp[a-z0-9_]{8}"]))


def _check_machine_paths(app, docname, source):
    from sphinx.util import logging  # noqa: PLC0415 (Sphinx is present while building)

    for found in _MACHINE_PATHS.finditer(source[0]):
        line = source[0].count("\n", 0, found.start()) + 1
        logging.getLogger(__name__).warning(
            "shows a path of the build machine (%r): print names relative to a folder, or "
            "silence the warning that carries it", found.group(0),
            location=(docname, line))


def setup(app):
    app.connect("source-read", _check_machine_paths)
