"""Sphinx configuration of fastmv's documentation site.

Build: ``pip install -e '.[docs]' && sphinx-build -W -b html docs docs/_build/html`` (see
the README). Narrative pages are the Markdown files of this folder (myst-parser), the API
reference is generated from the numpydoc docstrings, and the gallery runs every script of
``docs/examples`` (sphinx-gallery) so that its pictures are made by the build.
"""
import os
import sys

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
exclude_patterns = ["_build", "examples", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip"]
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
