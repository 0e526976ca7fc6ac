"""fastmv.metrics against scikit-learn, brute force and direct formulas."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastmv import metrics
from fastmv._core import _contingency

sk = pytest.importorskip("sklearn.metrics")

SK_METHODS = ("geometric", "arithmetic", "min", "max")
KEYS = {"acc", "nmi", "ari", "f_score", "precision", "recall", "purity", "entropy"}


def random_labelings(seed=0, count=300):
    """Seeded random labelings incl. n=1, single clusters and unequal numbers of clusters."""
    rng = np.random.default_rng(seed)
    for t in range(count):
        n = int(rng.choice([1, 2, 3, 5, 10, 37, 200, 1000]))
        k1 = int(rng.integers(1, 12))
        k2 = int(rng.integers(1, 12))
        a = rng.integers(0, k1, n)
        b = rng.integers(0, k2, n)
        if t % 5 == 1:          # correlated labelings
            b = np.where(rng.random(n) < 0.7, a, b)
        if t % 7 == 2:          # awkward label values
            a = a * 13 - 40
            b = b.astype(str)
        yield a, b


# ---------------------------------------------------------------------------------------
# brute-force references (tiny n only)
# ---------------------------------------------------------------------------------------

def brute_accuracy(y_true, y_pred):
    ut, up = np.unique(y_true), np.unique(y_pred)
    best = 0
    if len(up) <= len(ut):
        for perm in itertools.permutations(ut, len(up)):
            mapping = dict(zip(up, perm))
            best = max(best, sum(mapping[p] == t for p, t in zip(y_pred, y_true)))
    else:
        for perm in itertools.permutations(up, len(ut)):
            mapping = dict(zip(perm, ut))
            best = max(best, sum(mapping.get(p, None) == t for p, t in zip(y_pred, y_true)))
    return best / len(y_true)


def brute_pairs(y_true, y_pred):
    n = len(y_true)
    tp = pred = true = 0
    for i in range(n):
        for j in range(i + 1, n):
            st_, sp_ = y_true[i] == y_true[j], y_pred[i] == y_pred[j]
            tp += st_ and sp_
            pred += sp_
            true += st_
    p = tp / pred if pred else 1.0
    r = tp / true if true else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def direct_purity_entropy(y_true, y_pred, base=2.0):
    n = len(y_true)
    pur = ent = 0.0
    for c in np.unique(y_pred):
        members = y_true[y_pred == c]
        _, cnt = np.unique(members, return_counts=True)
        pur += cnt.max()
        q = cnt / cnt.sum()
        ent += len(members) / n * -(q * np.log(q) / np.log(base)).sum()
    return pur / n, ent


# ---------------------------------------------------------------------------------------
# agreement with scikit-learn
# ---------------------------------------------------------------------------------------

def test_nmi_ari_match_sklearn_on_random_labelings():
    for a, b in random_labelings():
        for m in SK_METHODS:
            assert metrics.nmi(a, b, average_method=m) == pytest.approx(
                sk.normalized_mutual_info_score(a, b, average_method=m), abs=1e-10), (a, b, m)
        assert metrics.ari(a, b) == pytest.approx(sk.adjusted_rand_score(a, b), abs=1e-10)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 4), st.integers(0, 6)), min_size=1, max_size=60))
def test_nmi_ari_match_sklearn_hypothesis(pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    for m in SK_METHODS:
        assert metrics.nmi(a, b, m) == pytest.approx(
            sk.normalized_mutual_info_score(a, b, average_method=m), abs=1e-10)
    assert metrics.ari(a, b) == pytest.approx(sk.adjusted_rand_score(a, b), abs=1e-10)


def test_large_n_matches_sklearn_and_no_overflow():
    rng = np.random.default_rng(3)
    n = 300_000
    a = rng.integers(0, 20, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 25, n))
    # NB scikit-learn's default normalisation is "arithmetic"; ours is "geometric"
    assert metrics.nmi(a, b) == pytest.approx(
        sk.normalized_mutual_info_score(a, b, average_method="geometric"), abs=1e-10)
    assert metrics.nmi(a, b, "arithmetic") == pytest.approx(
        sk.normalized_mutual_info_score(a, b), abs=1e-10)
    assert metrics.ari(a, b) == pytest.approx(sk.adjusted_rand_score(a, b), abs=1e-10)
    # labels are aligned already (b = a on 60%): the optimal matching is the identity
    assert metrics.accuracy(a, b) == pytest.approx(sk.accuracy_score(a, b), abs=1e-12)
    np.testing.assert_array_equal(metrics.contingency_matrix(a, b),
                                  sk.cluster.contingency_matrix(a, b))


def test_joint_normalisation_direct_formula():
    for a, b in itertools.islice(random_labelings(seed=5), 60):
        ka, kb = len(np.unique(a)), len(np.unique(b))
        mi = sk.mutual_info_score(a, b)
        _, joint_counts = np.unique(np.stack([np.unique(a, return_inverse=True)[1],
                                              np.unique(b, return_inverse=True)[1]]),
                                    axis=1, return_counts=True)
        q = joint_counts / len(a)
        hj = -(q * np.log(q)).sum()
        if ka == kb == 1:
            expected = 1.0
        elif mi <= 1e-15:
            expected = 0.0
        else:
            expected = mi / hj
        assert metrics.nmi(a, b, "joint") == pytest.approx(expected, abs=1e-10)
        # ordering of the normalisers: min ≥ geometric ≥ arithmetic ≥ max ≥ joint
        vals = [metrics.nmi(a, b, m) for m in ("min", "geometric", "arithmetic", "max", "joint")]
        assert all(x >= y - 1e-12 for x, y in zip(vals, vals[1:]))


# ---------------------------------------------------------------------------------------
# brute force and direct formulas
# ---------------------------------------------------------------------------------------

def test_accuracy_equals_brute_force_permutation_search():
    rng = np.random.default_rng(1)
    for _ in range(120):
        n = int(rng.integers(1, 25))
        a = rng.integers(0, int(rng.integers(1, 6)), n)
        b = rng.integers(0, int(rng.integers(1, 6)), n) * 3 + 1
        assert metrics.accuracy(a, b) == pytest.approx(brute_accuracy(a, b), abs=1e-12)


def test_accuracy_sparse_matching_path_equals_dense(monkeypatch):
    rng = np.random.default_rng(2)
    cases = []
    for _ in range(15):
        n = int(rng.integers(20, 200))
        a = rng.integers(0, int(rng.integers(1, 40)), n)
        b = np.where(rng.random(n) < 0.5, a, rng.integers(0, int(rng.integers(1, 60)), n))
        cases.append((a, b))
    cases.append((np.arange(50), np.zeros(50, int)))           # k1 = n, k2 = 1
    cases.append((np.zeros(50, int), np.arange(50)))
    dense = [metrics.accuracy(a, b) for a, b in cases]
    dense_eval = [metrics.evaluate(a, b) for a, b in cases]
    monkeypatch.setattr(_contingency, "_DENSE_MATCH_LIMIT", 0)
    monkeypatch.setattr(_contingency, "_DENSE_TABLE_LIMIT", 0)     # sparse (sorted) table too
    for (a, b), acc, ev in zip(cases, dense, dense_eval):
        assert metrics.accuracy(a, b) == pytest.approx(acc, abs=1e-12)
        assert metrics.evaluate(a, b) == pytest.approx(ev, abs=1e-12)


def test_pairwise_precision_recall_f_equal_brute_force():
    rng = np.random.default_rng(4)
    for _ in range(80):
        n = int(rng.integers(1, 40))
        a = rng.integers(0, int(rng.integers(1, 6)), n)
        b = rng.integers(0, int(rng.integers(1, 8)), n)
        p, r, f = brute_pairs(a, b)
        assert metrics.precision(a, b) == pytest.approx(p, abs=1e-12)
        assert metrics.recall(a, b) == pytest.approx(r, abs=1e-12)
        assert metrics.f_score(a, b) == pytest.approx(f, abs=1e-12)


def test_pairwise_edge_conventions():
    sing = np.arange(6)
    one = np.zeros(6, int)
    # y_pred joins nothing: precision 1 (no false joins), recall 0, F 0
    assert (metrics.precision(one, sing), metrics.recall(one, sing), metrics.f_score(one, sing)) \
        == (1.0, 0.0, 0.0)
    # singletons on both sides: perfect
    assert metrics.f_score(sing, sing + 10) == 1.0


def test_purity_entropy_direct_formulas():
    rng = np.random.default_rng(6)
    for _ in range(60):
        n = int(rng.integers(1, 300))
        a = rng.integers(0, int(rng.integers(1, 8)), n)
        b = rng.integers(0, int(rng.integers(1, 8)), n)
        pur, ent = direct_purity_entropy(a, b)
        assert metrics.purity(a, b) == pytest.approx(pur, abs=1e-12)
        assert metrics.entropy(a, b) == pytest.approx(ent, abs=1e-12)
        _, ent_e = direct_purity_entropy(a, b, base=math.e)
        assert metrics.entropy(a, b, base=math.e) == pytest.approx(ent_e, abs=1e-12)
        # average entropy is the conditional entropy H(U|V) = H(U) - I(U;V)  (nats)
        hu = -sum(c / n * math.log(c / n) for c in np.unique(a, return_counts=True)[1])
        assert ent_e == pytest.approx(hu - sk.mutual_info_score(a, b), abs=1e-10)


def test_entropy_base2_two_balanced_classes_one_cluster_is_one_bit():
    y = np.repeat([0, 1], 50)
    assert metrics.entropy(y, np.zeros(100, int)) == pytest.approx(1.0)
    assert metrics.entropy(y, y) == 0.0


# ---------------------------------------------------------------------------------------
# invariants, edge cases, label types
# ---------------------------------------------------------------------------------------

def test_perfect_clustering_under_relabelling():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 6, 500)
    perm = rng.permutation(6)
    for pred in (perm[y], np.array(["c%d" % v for v in perm[y]]), perm[y] * -5 + 1000):
        ev = metrics.evaluate(y, pred)
        assert set(ev) == KEYS
        for key in ("acc", "nmi", "ari", "f_score", "precision", "recall", "purity"):
            assert ev[key] == pytest.approx(1.0, abs=1e-12), key
        assert ev["entropy"] == pytest.approx(0.0, abs=1e-12)
        for m in ("geometric", "arithmetic", "min", "max", "joint"):
            assert metrics.nmi(y, pred, m) == pytest.approx(1.0, abs=1e-12)


def test_evaluate_matches_individual_functions():
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 4, 300), rng.integers(0, 6, 300)
    ev = metrics.evaluate(a, b)
    assert ev == {"acc": metrics.accuracy(a, b), "nmi": metrics.nmi(a, b), "ari": metrics.ari(a, b),
                  "f_score": metrics.f_score(a, b), "precision": metrics.precision(a, b),
                  "recall": metrics.recall(a, b), "purity": metrics.purity(a, b),
                  "entropy": metrics.entropy(a, b)}
    assert all(type(v) is float for v in ev.values())


def test_single_sample_and_single_cluster_conventions():
    ev = metrics.evaluate([3], [7])
    assert ev["acc"] == ev["nmi"] == ev["ari"] == ev["f_score"] == ev["purity"] == 1.0
    assert ev["entropy"] == 0.0
    one = np.zeros(10, int)
    two = np.arange(10) % 2
    assert metrics.nmi(one, one + 4) == 1.0          # both single cluster: sklearn gives 1
    assert metrics.nmi(one, two) == 0.0              # one side single: MI = 0
    assert metrics.nmi(two, one) == 0.0
    assert metrics.ari(one, one) == 1.0
    assert metrics.accuracy(two, one) == 0.5


def test_label_types_give_same_results():
    rng = np.random.default_rng(9)
    a, b = rng.integers(0, 5, 400), rng.integers(0, 7, 400)
    ref = metrics.evaluate(a, b)
    variants = [
        (a - 100, b * 1000),                                       # negative / sparse ints
        (a.astype(np.int8), b.astype(np.uint16)),
        (a * 10**15, b - 2**40),                                   # huge range: sort path
        (a.astype(np.uint64) + np.uint64(2**63), b),               # beyond int64
        (np.array(list("abcde"))[a], np.array(["x%d" % v for v in b])),
        (a.astype(float) / 3, b.astype(np.float32)),
        (list(a), tuple(b)),
    ]
    for ya, yb in variants:
        assert metrics.evaluate(ya, yb) == pytest.approx(ref, abs=1e-12)
    bools = rng.random(50) < 0.5
    assert metrics.nmi(bools, bools.astype(int)) == pytest.approx(1.0)


def test_contingency_matrix_orders_labels_and_sparse_option():
    C = metrics.contingency_matrix([2, 2, -1, 5], ["b", "a", "a", "b"])
    np.testing.assert_array_equal(C, [[1, 0], [1, 1], [0, 1]])
    assert C.dtype == np.int64
    S = metrics.contingency_matrix([2, 2, -1, 5], ["b", "a", "a", "b"], sparse=True)
    np.testing.assert_array_equal(S.toarray(), C)


def test_inputs_unchanged():
    a = np.array([3, 1, 1, 2, 3, 3])
    b = np.array([0, 0, 1, 1, 2, 2])
    a0, b0 = a.copy(), b.copy()
    metrics.evaluate(a, b)
    metrics.contingency_matrix(a, b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("bad, match", [
    (([], []), "y_true is empty"),
    (([1, 2], [1]), "same length"),
    (([[1, 2]], [1, 2]), "y_true must be 1-D"),
    (([1, 2], [[[1, 2]]]), "y_pred must be 1-D"),
    (([1.0, np.nan], [1, 2]), "y_true contains NaN"),
    (([1, 2], [1.0, np.inf]), "y_pred contains NaN"),
])
def test_validation_errors_name_argument(bad, match):
    with pytest.raises(ValueError, match=match):
        metrics.evaluate(*bad)


def test_parameter_validation():
    with pytest.raises(ValueError, match="average_method"):
        metrics.nmi([0, 1], [0, 1], average_method="harmonic")
    with pytest.raises(ValueError, match="base"):
        metrics.entropy([0, 1], [0, 1], base=1)
    with pytest.raises(TypeError, match="base"):
        metrics.entropy([0, 1], [0, 1], base="2")


# ------------------------------------------------------------------ per-view labels (CMVNMF)
def test_evaluate_per_view_labels_is_the_mean_of_each_views_scores():
    y = np.repeat([0, 1, 2], 4)
    views = [np.repeat([2, 0, 1], 4), np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2])]
    per_view = [metrics.evaluate(y, lab) for lab in views]
    for as_given in (views, np.stack(views), tuple(views)):
        got = metrics.evaluate(y, as_given)
        for k in got:
            assert got[k] == pytest.approx(np.mean([s[k] for s in per_view])), k
    # each view's cluster numbers are matched on their own: a relabelled view is still perfect
    assert metrics.evaluate(y, [y, (y + 1) % 3])["acc"] == 1.0
    # concatenating the views and matching once would not give that
    assert metrics.accuracy(np.r_[y, y], np.r_[y, (y + 1) % 3]) < 1.0


def test_evaluate_per_view_truths_of_different_lengths():
    ys = [np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0, 0, 1])]
    preds = [np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1, 1, 1])]
    got = metrics.evaluate(ys, preds)
    assert got["acc"] == pytest.approx((1.0 + metrics.accuracy(ys[1], preds[1])) / 2)
    with pytest.raises(ValueError, match="y_true holds 2 labellings but y_pred holds 3"):
        metrics.evaluate(ys, preds + [preds[0]])
    with pytest.raises(ValueError, match="view 1: .*same length"):
        metrics.evaluate([ys[0], ys[0]], preds)
