"""Validate the docstrings of every public object with numpydoc.

Checks that matter for users reading ``help()``: every parameter of the signature is
documented and nothing else is (PR01, PR02), parameters are in signature order (PR03), a
summary exists (GL08, SS01), and public functions have an Examples section (EX01).
Exits 1 listing the failures.
"""
from __future__ import annotations

import dataclasses
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


def _is_result_class(obj):
    return inspect.isclass(obj) and dataclasses.is_dataclass(obj) and any(
        base.__name__ == "Result" for base in obj.__mro__)


def _result_fields_documented(qualname, obj):
    """Result classes are built by the solvers, not by users: their fields are documented
    as Attributes (numpydoc's PR01 would ask for a Parameters section)."""
    doc = inspect.getdoc(obj) or ""
    section = doc.split("Attributes\n----------", 1)
    if len(section) < 2:
        section = doc.split("Parameters\n----------", 1)
    if len(section) < 2:
        return [f"{qualname}: no Attributes (or Parameters) section"]
    text = section[1]
    own = [f.name for f in dataclasses.fields(obj)]
    base = {"labels", "objective", "n_iter", "converged"} if obj.__name__ != "Result" else set()
    return [f"{qualname}: field {name!r} not documented under Attributes" for name in own
            if name not in base and not any(line.split(" :")[0].strip() == name
                                            or name in line.split(" :")[0].split(", ")
                                            for line in text.splitlines() if " :" in line)]


def main():
    failures = []
    count = 0
    for qualname, obj in public_objects():
        count += 1
        if _is_result_class(obj):
            failures += _result_fields_documented(qualname, obj)
            continue
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
