"""`medres plan pressure` from a pilot run: each condition's pairs against repeat are the pairs the
report's excess-over-repeat test counts (the second turns of items right at turn 1, each against
the repeat control's), read back as the pilot's discordant shares."""

from __future__ import annotations

import re

import pytest

from conftest import MARKER, oracle_policy, tiny_items_and_bundles
from medresilience import EvalOptions, Suite, evaluate, parse_model_spec
from medresilience.analyses import planning
from medresilience.families.misleading.bundles import bundle_id_for, probes_from_bundle
from medresilience.families.pressure.construct.build import build_pressure
from medresilience.family import get
from medresilience.records import SuiteManifest
from medresilience.runtime.errors import ConfigError


def scripted(messages, request):
    """Turn 1: the oracle (gold, except q4). Turn 2: a marker in the claim wins; doubt moves q2 to A;
    repeat moves q3 to A; otherwise the first answer stands."""
    if len(messages) < 3:
        return oracle_policy(messages, request)
    turn, first = messages[-1]["content"], messages[-2]["content"]
    q = int(re.search(r"Question number (\d+)", messages[-3]["content"]).group(1))
    m = MARKER.search(turn)
    if m:
        return f"Answer: {m.group(1)}"
    if turn.startswith("Are you sure?") and q == 2:
        return "Answer: A"
    if turn.startswith("Please state your answer") and q == 3:
        return "Answer: A"
    return first


@pytest.fixture(scope="module")
def pilot(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("pressure-plan")
    items, probes = [], []
    for item, sentences, ct, _ in tiny_items_and_bundles():
        items.append(item)
        for pv in ("neutral", "patient", "authority"):
            probes += probes_from_bundle(item, sentences, ct, pv, 7, bundle_id_for(item.id, ct, pv))
    Suite(SuiteManifest(name="tiny", family="misleading", seed=7), items, probes).save(root / "misleading")
    build_pressure(root / "misleading", root / "pressure")
    srv = stub_server(policy=scripted)
    res = evaluate(Suite.load(root / "pressure"), [parse_model_spec(f"openai:m,base_url={srv.base_url}")], root / "run", EvalOptions())
    return root / "run", res.results.models["m"]["none"]["by_condition"]


def test_the_pilot_reads_the_pairs_the_excess_over_repeat_counts(pilot):
    run, by_condition = pilot
    fam = get("pressure")
    pooled, *single = fam.measures.comparisons
    for comp in single:
        (cond,) = comp.conditions
        excess = by_condition[cond]["excess_over_repeat"]
        got = planning.from_pilot(run, fam, comp)
        n = got.pilot["pairs"]
        assert n == excess["n"] == 3  # q1..q3 are right at turn 1; q4 does not enter
        # the report counts the answer kept (b: kept under repeat only); the plan counts the flip, A = repeat
        # (p10: flipped under repeat only): the same discordant pairs, named from the other side
        assert (round(got.rates.p10 * n), round(got.rates.p01 * n)) == (excess["test"]["c"], excess["test"]["b"]), cond
        assert got.kept == pytest.approx(3 / 4) and got.sizes == (1, 1, 1)
    # the headline pools every pushback condition against repeat: each item right at turn 1 gives one
    # pair per pushback condition (clustered by item), the pairs of the single comparisons together
    assert pooled.key == "flip_pushback" and set(pooled.conditions) == {c.conditions[0] for c in single}
    got = planning.from_pilot(run, fam, pooled)
    assert got.pilot["pairs"] == sum(by_condition[c.conditions[0]]["excess_over_repeat"]["n"] for c in single) == 3 * len(single)
    assert got.sizes == (len(single),) * 3 and pooled.pairs_per_item == len(single)
    # doubt moves q2, repeat moves q3: one discordant pair each way, no effect to plan for
    doubt = planning.from_pilot(run, fam, planning.comparison_of(fam, "flip_doubt"))
    assert (doubt.rates.p1, doubt.rates.p2, doubt.rates.discordance) == pytest.approx((1 / 3, 1 / 3, 2 / 3))
    with pytest.raises(ConfigError, match=r"the effect p2 - p1 is 0 .*plan for the difference you want to detect with --effect"):
        planning.plan_items(fam, planning.comparison_of(fam, "flip_doubt"), doubt)
    wanted = planning.from_pilot(run, fam, planning.comparison_of(fam, "flip_doubt"), effect=0.2)
    assert planning.plan_items(fam, planning.comparison_of(fam, "flip_doubt"), wanted).power >= 0.8
