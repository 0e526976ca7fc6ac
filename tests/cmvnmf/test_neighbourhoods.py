"""CMVNMF's must-link neighbourhoods: the components of the must-link graph, split where the
cannot-links contradict them."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastmv._cmvnmf import _neighbourhoods as NB
from fastmv._cmvnmf._pairs import build_constraints


def _blocks(must, cannot, n):
    """One view of ``n`` rows with intra-view pairs (the graph reads ``*_global`` only)."""
    return build_constraints({(0, 0): (np.asarray(must, np.int64).reshape(-1, 2),
                                       np.asarray(cannot, np.int64).reshape(-1, 2))},
                             [n], np.float64)


def _clique(rows):
    return [(a, b) for i, a in enumerate(rows) for b in rows[i + 1:]]


def _same_partition(a, b):
    """Equal up to the numbering of the parts."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def _naive_components(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    return np.array([find(x) for x in range(n)])


def test_consistent_pairs_give_the_plain_components():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 60)
    i, j = rng.integers(0, 60, (2, 200))
    must = [(a, b) for a, b in zip(i, j) if a != b and y[a] == y[b]]
    cannot = [(a, b) for a, b in zip(j, i) if y[a] != y[b]]
    got = NB.neighbourhoods(_blocks(must, cannot, 60), 60, 4)
    assert _same_partition(got, _naive_components(60, must))
    assert NB.conflicts(_blocks(must, cannot, 60), 60) == 0


def test_a_wrong_must_link_between_two_cliques_is_removed():
    left, right = list(range(0, 8)), list(range(8, 16))
    must = _clique(left) + _clique(right) + [(3, 12)]         # the wrong one
    cannot = [(0, 9), (1, 15)]                                 # next to it: contradicts it
    blocks = _blocks(must, cannot, 17)                         # row 16 alone
    assert NB.conflicts(blocks, 17) == 2
    got = NB.neighbourhoods(blocks, 17, 2)
    assert _same_partition(got, np.array([0] * 8 + [1] * 8 + [2]))


def test_a_wrong_must_link_no_cannot_link_sees_is_cut_by_the_bisection():
    # the cannot-link is far from the wrong edge's ends, so only the bisection finds it
    left, right = list(range(0, 10)), list(range(10, 20))
    must = _clique(left) + _clique(right) + [(0, 10)]
    cannot = [(5, 15)]
    blocks = _blocks(must, cannot, 20)
    graph = NB.must_link_graph(blocks, 20)
    # (0, 10) is not contradicted at one step: (0, w) and (10, w) are never cannot-links
    assert NB._without_contradicted_edges(graph, blocks.cannot_global.astype(np.int64)).nnz \
        == graph.nnz
    got = NB.neighbourhoods(blocks, 20, 2)
    assert _same_partition(got, np.array([0] * 10 + [1] * 10))


def test_contradicted_edges_match_their_naive_twin():
    rng = np.random.default_rng(4)
    n = 50
    y = rng.integers(0, 3, n)
    i, j = rng.integers(0, n, (2, 300))
    must = [(a, b) for a, b in zip(i, j) if a != b and (y[a] == y[b] or rng.random() < 0.05)]
    cannot = [(a, b) for a, b in zip(j[:150], i[:150]) if y[a] != y[b]]
    blocks = _blocks(must, cannot, n)
    graph = NB.must_link_graph(blocks, n)
    got = NB._without_contradicted_edges(graph, blocks.cannot_global.astype(np.int64))
    nbr = [set(graph[x].indices.tolist()) for x in range(n)]
    cl = {(a, b) for a, b in cannot} | {(b, a) for a, b in cannot}
    want = {(u, v) for u in range(n) for v in nbr[u] if u < v
            and not any((u, w) in cl for w in nbr[v]) and not any((v, w) in cl for w in nbr[u])}
    kept = sp.triu(got, k=1).tocoo()
    assert set(zip(kept.row.tolist(), kept.col.tolist())) == want
    # a kept edge keeps its weight (a repeated must-link counts twice)
    full = sp.triu(graph, k=1).todok()
    assert all(got[u, v] == full[u, v] for u, v in want)


@pytest.mark.parametrize("seed", range(5))
def test_no_cannot_link_stays_inside_a_neighbourhood(seed):
    rng = np.random.default_rng(seed)
    n, c = 120, 4
    y = np.repeat(np.arange(c), n // c)
    i, j = rng.integers(0, n, (2, 900))
    must = [(a, b) for a, b in zip(i, j) if a != b and y[a] == y[b]]
    must += [(a, b) for a, b in zip(i[:20], j[:20]) if y[a] != y[b]]         # wrong ones
    cannot = [(a, b) for a, b in zip(j[20:], i[20:]) if y[a] != y[b]][:300]
    cannot = [p for p in cannot if p not in set(must)]
    blocks = _blocks(must, cannot, n)
    got = NB.neighbourhoods(blocks, n, c)
    cg = blocks.cannot_global
    assert not np.any(got[cg[:, 0]] == got[cg[:, 1]])
    np.testing.assert_array_equal(got, NB.neighbourhoods(blocks, n, c))   # deterministic
    # every neighbourhood is joined by must-links (no rows glued together that were apart)
    plain = NB._components(NB.must_link_graph(blocks, n))
    assert all(len(set(plain[got == k])) == 1 for k in np.unique(got))


def test_the_bisection_is_the_same_dense_and_sparse(monkeypatch):
    rng = np.random.default_rng(2)
    left, right = np.arange(0, 300), np.arange(300, 600)
    edges = [(a, b) for part in (left, right) for a, b in
             zip(rng.choice(part, 3000), rng.choice(part, 3000)) if a != b]
    edges += [(int(a), int(b)) for a, b in zip(rng.choice(left, 5), rng.choice(right, 5))]
    e = np.array(edges)
    graph = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(600, 600))
    graph = (graph + graph.T).tocsr()
    sparse = NB._bisect(graph)
    monkeypatch.setattr(NB, "_DENSE_ROWS", 10_000)
    dense = NB._bisect(graph)
    assert _same_partition(sparse, dense)
    assert _same_partition(dense, np.repeat([0, 1], 300))


def test_small_or_edgeless_pieces():
    assert NB._bisect(sp.csr_matrix((2, 2))).tolist() == [0, 1]
    # a contradicted pair alone: split into two rows
    got = NB.neighbourhoods(_blocks([(0, 1)], [(0, 1)], 2), 2, 1)
    assert got[0] != got[1]
    # no cannot-links: nothing to split
    np.testing.assert_array_equal(NB.neighbourhoods(_blocks([(0, 1)], [], 3), 3, 2),
                                  NB._components(NB.must_link_graph(_blocks([(0, 1)], [], 3),
                                                                    3)))
