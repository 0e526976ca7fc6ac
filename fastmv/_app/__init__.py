"""The user-facing layer over the solvers: command line, its options, the registry of
solvers, the warm-up calls and the helpers that write the estimators' docstrings."""
