"""Smoke runs of the entry points that reproduce the documentation's tables
(``benchmarks/defaults_table.py`` for docs/defaults.md, ``benchmarks/time_to_solution.py``
for docs/performance.md), on the embedded 200-sample subsample ``tiny``."""
import json

import pytest

pytest.importorskip("sklearn")

from benchmarks import defaults_table, time_to_solution  # noqa: E402


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_defaults_table_runs_and_prints_the_docs_rows(tmp_path, capsys):
    out = tmp_path / "defaults.jsonl"
    # the solver compared on pairs and the one compared without side information
    side = {kind: key for key, kind in reversed(defaults_table.SIDE.items())}
    pairs, plain = side["pairs"], side["none"]
    defaults_table.main(["run", "--solver", pairs, plain, "--data", "tiny", "--seeds", "0",
                         "--out", str(out)])
    recs = _records(out)
    assert [(r["solver"], r["dataset"], r["seed"]) for r in recs] == [
        (pairs, "tiny", 0), (plain, "tiny", 0)]
    for r in recs:
        assert "error" not in r, r
        assert 0.3 < r["acc"] <= 1.0 and 0.3 < r["nmi"] <= 1.0, r
    defaults_table.main(["run", "--solver", pairs, "--data", "tiny", "--seeds", "0",
                         "--out", str(out)])
    assert len(_records(out)) == 2, "a record already there is not recomputed"
    capsys.readouterr()
    defaults_table.main(["table", "--doc", "--out", str(out)])
    rows = [line for line in capsys.readouterr().out.splitlines() if "| tiny |" in line]
    assert len(rows) == 2  # in the registry's order
    first, second = sorted((pairs, plain), key=list(defaults_table.LABEL).index)
    assert rows[0].startswith(f"| {defaults_table.LABEL[first]} | tiny | ")
    assert rows[1].startswith(f"| {defaults_table.LABEL[second]} | tiny | ")
    assert "constrained-spectral" in rows[first != pairs] or "kmeans" in rows[first != pairs]


def test_time_to_solution_runs_and_prints_ratios(tmp_path, capsys):
    out = tmp_path / "tts.jsonl"
    time_to_solution.main(["run", "--solver", "mvmc", "--data", "tiny", "--tag", "smoke",
                           "--out", str(out)])
    (rec,) = _records(out)
    assert rec["tag"] == "smoke" and rec["yardstick"] == "kmeans"
    assert rec["seconds"] > 0 and rec["yardstick_s"] > 0
    assert rec["ratio"] == pytest.approx(rec["seconds"] / rec["yardstick_s"])
    assert 0.3 < rec["acc"] <= 1.0
    capsys.readouterr()
    time_to_solution.main(["table", "--out", str(out)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| solver | dataset | yardstick s | smoke: s |")
    assert lines[2].startswith("| mvmc | tiny | ")


def test_defaults_table_sends_each_emvc_option_where_it_belongs(tmp_path, monkeypatch):
    # a graph parameter goes to transition_matrix, any other to emvc
    import functools

    import fastmv
    seen = {}
    graph, solve = fastmv.transition_matrix, fastmv.emvc

    @functools.wraps(graph)                 # the benchmark reads the graph's signature
    def transition_matrix(X, **kw):
        seen.setdefault("graph", kw)
        return graph(X, **kw)

    def emvc(P, lam1, lam2, **kw):
        seen["solver"] = kw
        return solve(P, lam1, lam2, **kw)

    monkeypatch.setattr(fastmv, "transition_matrix", transition_matrix)
    monkeypatch.setattr(fastmv, "emvc", emvc)
    out = tmp_path / "defaults.jsonl"
    defaults_table.main(["run", "--solver", "emvc", "--data", "tiny", "--seeds", "0",
                         "--set", "n_neighbors=8", "--set", "max_rank=None",
                         "--out", str(out)])
    (rec,) = _records(out)
    assert "error" not in rec, rec
    assert seen["graph"] == {"n_neighbors": 8}
    assert seen["solver"]["max_rank"] is None and "n_neighbors" not in seen["solver"]
