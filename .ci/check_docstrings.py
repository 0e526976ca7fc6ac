"""Validate the docstrings of every public object with numpydoc.

Checks that matter for users reading ``help()``: every parameter of the signature is
documented and nothing else is (PR01, PR02), parameters are in signature order (PR03), a
summary exists (GL08, SS01), and public functions have an Examples section (EX01).
Exits 1 listing the failures.
"""
from __future__ import annotations

import importlib
import inspect
import sys

from numpydoc.validate import validate

CHECKS = {"GL08", "SS01", "PR01", "PR02", "PR03", "EX01"}
MODULES = ["fastmv", "fastmv.metrics", "fastmv.simulate", "fastmv.datasets", "fastmv.plot",
           "fastmv.estimators", "fastmv.exceptions"]


def public_objects():
    seen = set()
    for modname in MODULES:
        try:
            module = importlib.import_module(modname)
        except ImportError:
            continue
        names = getattr(module, "__all__", None) or [n for n in dir(module)
                                                     if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if obj is None or inspect.ismodule(obj) or id(obj) in seen:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            seen.add(id(obj))
            target = inspect.unwrap(obj) if inspect.isfunction(obj) else obj
            yield f"{target.__module__}.{target.__qualname__}", obj


def main():
    failures = []
    count = 0
    for qualname, obj in public_objects():
        count += 1
        result = validate(qualname)
        for code, message in result["errors"]:
            if code not in CHECKS:
                continue
            if code == "EX01" and inspect.isclass(obj) and issubclass(obj, BaseException):
                continue
            failures.append(f"{qualname}: {code} {message}")
    for line in failures:
        print(line)
    print(f"numpydoc: {count} public objects, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
