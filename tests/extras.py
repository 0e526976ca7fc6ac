"""Which of fastmv's optional extras are installed, and whether each one imports.

``pip check`` accepts a broken pair (a ``dask`` beside a ``distributed`` from another
year), and ``pytest.importorskip`` turns the import error it causes into a skip, so a broken
extra can pass a test run. This module answers two questions from the installed package's
own metadata, with no list of extras written out by hand:

- :func:`installed_extras` — the extras whose every requirement is installed, each with the
  modules its requirements provide;
- ``python -m tests.extras`` — imports every one of those modules and exits non-zero,
  naming each failure, when one does not import (``.ci/run`` calls it after every install).

``tests/conftest.py`` uses :func:`strict_modules` so that, with ``FASTMV_STRICT_EXTRAS=1``,
``pytest.importorskip`` of a module an installed extra provides imports it plainly: an
import error fails the test instead of skipping it.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata as metadata
import importlib.util
import re
import sys

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _modules_of(distribution: str) -> list[str]:
    """The top-level modules an installed distribution provides (none for a binary-only one,
    such as ruff)."""
    providers = metadata.packages_distributions()
    wanted = _normalise(distribution)
    return sorted(module for module, dists in providers.items()
                  if any(_normalise(d) == wanted for d in dists)
                  and not module.startswith("_") and module.isidentifier())


def _installed(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def installed_extras(package: str = "fastmv") -> dict[str, list[str]]:
    """Map each extra of ``package`` whose requirements are all installed to the modules
    those requirements provide (``dask[array]`` adds ``dask.array``)."""
    try:
        requires = metadata.distribution(package).requires or []
    except metadata.PackageNotFoundError:
        return {}
    extras: dict[str, list[tuple[str, list[str]]]] = {}
    for line in requires:
        requirement, _, marker = line.partition(";")
        extra = _EXTRA_MARKER.search(marker)
        parsed = _REQUIREMENT.match(requirement)
        if extra is None or parsed is None:
            continue
        sub_extras = [s.strip() for s in (parsed.group(2) or "").split(",") if s.strip()]
        extras.setdefault(extra.group(1), []).append((parsed.group(1), sub_extras))
    found: dict[str, list[str]] = {}
    for extra, requirements in extras.items():
        if not all(_installed(name) for name, _ in requirements):
            continue
        modules: set[str] = set()
        for name, sub_extras in requirements:
            tops = _modules_of(name)
            modules.update(tops)
            for top in tops:
                for sub in sub_extras:
                    if _has_submodule(top, sub):
                        modules.add(f"{top}.{sub}")
        found[extra] = sorted(modules)
    return found


def _has_submodule(top: str, sub: str) -> bool:
    spec = importlib.util.find_spec(top)
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        return False
    return importlib.machinery.PathFinder.find_spec(f"{top}.{sub}", list(locations)) is not None


def strict_modules(package: str = "fastmv") -> frozenset[str]:
    """The top-level names of every module an installed extra provides."""
    return frozenset(module.split(".")[0]
                     for modules in installed_extras(package).values() for module in modules)


def main() -> int:
    failures = []
    extras = installed_extras()
    for extra, modules in sorted(extras.items()):
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # any failure to import is what this check reports
                failures.append(f"extra {extra!r}: import {module} failed: "
                                f"{type(exc).__name__}: {exc}")
    print("installed extras:", ", ".join(f"{e} ({len(m)} modules)"
                                        for e, m in sorted(extras.items())) or "none")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
