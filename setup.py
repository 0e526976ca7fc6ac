"""The packages setuptools installs (the rest of the configuration is in pyproject.toml):
every package under ``fastmv/``, found, so that a new solver folder is in the wheel without
another list to edit, and ``kernels/``, which installs as ``fastmv.kernels``
(``package-dir`` in pyproject.toml)."""
from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["fastmv", "fastmv.*"]), "fastmv.kernels"])
