"""Sphinx configuration of the msvm documentation (numpydoc + sphinx-gallery).

Build from the repository root with ``python -m sphinx -W -b html docs docs/_build/html``.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from msvm import __version__  # noqa: E402

project = "msvm"
author = "msvm contributors"
copyright = "msvm contributors"
release = __version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "min_reported_time": 0,
    "show_memory": False,
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
}

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5"]
html_theme = "alabaster"
html_title = f"msvm {release}"
html_theme_options = {
    "description": "All-in-one multi-class SVMs",
    "page_width": "1150px",
    "sidebar_width": "230px",
}
html_static_path = []
