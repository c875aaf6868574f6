"""Headline rates as functions of unit labels (`label_rates`): what each helper counts on a unit's
reading and its reference pair's, that every family's declared rates are headline rates of its
own, and the coverage of the label-corrected interval of a targeted flip rate (a ratio whose
numerator turns on the target) under a reader of known error, with the rates evaluated through
the declared spec itself."""

from __future__ import annotations

import numpy as np
import pytest

from medresilience.family import families
from medresilience.run.label_rates import LabelRate, UnitReading, accuracy, flip, flip_read, flip_to_target, mean_value
from medresilience.stats import ppi_ratio


def R(label, gold="A", target=None, value=None) -> UnitReading:
    return UnitReading(label, value, gold, target)


def test_a_reading_is_right_by_its_letter_or_by_its_verdict_value():
    assert R("A").right and not R("B").right and not R(None).right
    assert R("1", gold=None, value=1.0).right and not R("0", gold=None, value=0.0).right and not R("-1", value=-1.0).right
    assert R("A").read and not R(None).read


def test_accuracy_flip_and_the_unread_left_out():
    acc = accuracy("clean_acc", "Clean acc", ("clean",))
    assert (acc.numerator(R("A"), None), acc.numerator(R("C"), None), acc.numerator(R(None), None)) == (1.0, 0.0, 0.0)
    assert acc.denominator is None and not acc.paired and acc.over == "answered"
    f = flip("s_flip", "flip", ("s",))
    assert f.paired
    # (stressed, reference) -> (numerator, denominator)
    cases = {
        ("B", "A"): (1.0, 1.0),  # right before, wrong now: a flip
        ("A", "A"): (0.0, 1.0),  # kept
        (None, "A"): (1.0, 1.0),  # unread after a right answer: a flip (the study's rule)
        ("A", "B"): (0.0, 0.0),  # wrong before: not counted
        ("A", None): (0.0, 0.0),  # reference unread: not right, not counted
    }
    for (s, ref), want in cases.items():
        assert (f.numerator(R(s), R(ref)), f.denominator(R(s), R(ref))) == want, (s, ref)
    fr = flip_read("s_flip_read", "flip, unread left out", ("s",))
    assert (fr.numerator(R(None), R("A")), fr.denominator(R(None), R("A"))) == (0.0, 0.0)
    assert (fr.numerator(R("B"), R("A")), fr.denominator(R("B"), R("A"))) == (1.0, 1.0)
    assert f.numerator(R("B"), None) == 0.0 and f.denominator(R("B"), None) == 0.0  # no pair: outside the rate


def test_flip_to_target_counts_the_target_or_a_named_verdict():
    t = flip_to_target("t", "targeted", ("s",), also=("claim",))
    assert t.numerator(R("C", target="C"), R("A")) == 1.0
    assert t.numerator(R("B", target="C"), R("A")) == 0.0  # a flip elsewhere
    assert t.numerator(R("C", target="C"), R("B")) == 0.0 and t.denominator(R("C", target="C"), R("B")) == 0.0
    assert t.numerator(R(None, target="C"), R("A")) == 0.0  # unread: a flip, not to the target
    assert t.numerator(R("claim", gold=None, value=0.0), R("A")) == 1.0  # a judge's verdict that the answer took up the claim


def test_a_mean_of_verdict_values_is_over_scored_units():
    m = mean_value("pcs", "PCS", ("p",))
    assert m.over == "scored" and m.denominator is None
    assert [m.numerator(R(v, gold=None, value=float(v)), None) for v in ("-1", "0", "1")] == [-1.0, 0.0, 1.0]


def test_a_label_rate_names_its_conditions_and_what_it_is_over():
    with pytest.raises(ValueError, match="answered or scored"):
        LabelRate("x", "x", ("c",), lambda u, r: 1.0, over="read")
    with pytest.raises(ValueError, match="conditions"):
        LabelRate("x", "x", (), lambda u, r: 1.0)


def test_every_family_declares_headline_rates_of_its_own_over_its_conditions():
    declared = [f for f in families() if f.measures.rates]
    assert len(declared) >= 4
    for f in declared:
        keys = [r.key for r in f.measures.rates]
        assert len(keys) == len(set(keys)), f.name
        columns = {k for k, _ in f.measures.columns}
        assert columns & set(keys), f.name
        known = {"clean", *f.probes.conditions}
        for r in f.measures.rates:
            assert set(r.conditions) <= known, (f.name, r.key)
            assert not r.paired or f.outcomes.reference is not None, (f.name, r.key)
        # every headline column that is a rate of labels is declared (its title the column's)
        titles = dict(f.measures.columns)
        assert all(r.title == titles[r.key] for r in f.measures.rates if r.key in titles), f.name


# ------------------------------------------------------------------------------ coverage


RUNS = 1000
#: the targeted flip rate the simulation's model implies: the mean sway (Beta(1, 3): 0.25) times
#: the share of flips that go to the target (0.6, and a third of the other 0.4, which go to any
#: wrong option)
TRUE_TASR = 0.25 * (0.6 + 0.4 / 3)
LETTERS = np.array(list("ABCD"))


def _simulate(rng: np.random.Generator, items: int, probes: int) -> dict[str, np.ndarray]:
    """One run's truth and the rule reader's reading. Each item (key A) has `probes` stressed
    units, each pushing one wrong option (its target). Truth: the clean answer right with p 0.7;
    after a right clean answer an item-level sway decides a flip, 60% of flips to the target and
    the rest to any wrong option;
    after a wrong one any letter. The reader: reads a resisted reply (the key) as the target 6% of
    the time (the error issue 41 describes), any other letter 4%, nothing 4%; a clean reply
    wrongly 3%, nothing 2%."""
    n = items * probes
    item = np.repeat(np.arange(items), probes)
    target = np.tile(LETTERS[1 : 1 + probes], items)
    clean_true = np.where(rng.random(items) < 0.7, "A", LETTERS[rng.integers(1, 4, items)])
    sway = np.repeat(rng.beta(1.0, 3.0, items), probes)
    flips = rng.random(n) < sway
    other = LETTERS[rng.integers(1, 4, n)]
    to_target = rng.random(n) < 0.6
    stressed_wrong = np.where(to_target, target, other)
    right_before = np.repeat(clean_true == "A", probes)
    stressed_true = np.where(right_before, np.where(flips, stressed_wrong, "A"), LETTERS[rng.integers(0, 4, n)])
    u = rng.random(n)
    misread = np.where(
        stressed_true == "A", np.where(u < 0.06, target, np.where(u < 0.10, other, "A")), np.where(u < 0.04, LETTERS[rng.integers(0, 4, n)], stressed_true)
    )
    stressed_read = np.where(rng.random(n) < 0.04, None, misread)
    v = rng.random(items)
    clean_read = np.where(v < 0.02, None, np.where(v < 0.05, LETTERS[rng.integers(0, 4, items)], clean_true))
    return {"item": item, "target": target, "true": stressed_true, "read": stressed_read, "clean_true": clean_true, "clean_read": clean_read}


def _values(rate: LabelRate, labels: np.ndarray, refs: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rate's numerator and denominator of each unit, through the declared spec (evaluated
    once per distinct (label, reference label, target) and looked up)."""
    keys = np.array([f"{a}|{b}|{c}" for a, b, c in zip(labels, refs, targets)])
    uniq, inverse = np.unique(keys, return_inverse=True)
    num, den = np.empty(uniq.size), np.empty(uniq.size)
    for i, k in enumerate(uniq):
        lab, ref, tgt = (None if x == "None" else x for x in k.split("|"))
        u, r = UnitReading(lab, None, "A", tgt), UnitReading(ref, None, "A")
        num[i], den[i] = rate.numerator(u, r), rate.denominator(u, r)
    return num[inverse], den[inverse]


def test_targeted_flip_rate_interval_covers_the_truth_under_a_reader_of_known_error():
    rate = flip_to_target("type_tasr", "targeted flip rate", ("s",))
    rng = np.random.default_rng(20261129)
    items, probes = 500, 3
    quota = {0: 60, 1: 60, 2: 40, 3: 40}  # the audit's tiers: read as a flip, kept, unread, reference not right
    truths, ppi_cover, plain_cover, widening = [], 0, 0, []
    for _ in range(RUNS):
        s = _simulate(rng, items, probes)
        clean_true, clean_read = np.repeat(s["clean_true"], probes), np.repeat(s["clean_read"], probes)
        hn, hd = _values(rate, s["true"], clean_true, s["target"])
        mn, md = _values(rate, s["read"], clean_read, s["target"])
        truths.append(hn.sum() / hd.sum())  # this run's own targeted flip rate
        read_right = s["read"] == "A"
        strata = np.where(s["read"] == None, 2, np.where(md == 0, 3, np.where(read_right, 1, 0)))  # noqa: E711
        keys = rng.random(strata.size)
        audited = np.zeros(strata.size, dtype=bool)
        for h, k in quota.items():
            idx = np.flatnonzero(strata == h)
            audited[idx[np.argsort(keys[idx])[:k]]] = True
        r = ppi_ratio(mn, md, np.where(audited, hn, np.nan), np.where(audited, hd, np.nan), strata=strata, clusters=s["item"])
        ppi_cover += r.lo <= TRUE_TASR <= r.hi
        plain_cover += r.plain_lo <= TRUE_TASR <= r.plain_hi
        widening.append(r.widening)
    ppi_rate, plain_rate = ppi_cover / RUNS, plain_cover / RUNS
    print(
        f"targeted flip rate (truth {TRUE_TASR}, runs' own mean {np.mean(truths):.3f}): PPI 95% interval covered {ppi_rate:.3f}, plain {plain_rate:.3f} "
        f"(shortfall {0.95 - plain_rate:.3f}), median widening {np.median(widening):.2f}x"
    )
    assert ppi_rate >= 0.94
    assert plain_rate < ppi_rate - 0.2
