"""Plain NumPy reference solvers, one module per solver, imported by the benchmarks and the
tests alike (never by the package)."""
