"""`medres plan`: every family's headline comparisons are declared on conditions it writes; a pilot
run (two stub models on the tiny suite, every Type 1 probe) gives the rates, discordant shares,
pairs per item, intracluster correlation and share of items entering that its units imply, and
the plan sizes them with the clustered test; assumed rates plan with the exact test; bad input
exits 2 with the flag named."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, oracle_policy
from medresilience.analyses import planning
from medresilience.cli import app
from medresilience.family import families, get
from medresilience.records import CLEAN
from medresilience.stats.power import mcnemar_size, paired_rates

KEY = "MEDRES_TEST_PLAN_KEY"
COPIES = 5


def steady_policy(messages, request):
    """The oracle without its weakness: the gold letter whatever the context says (never misled)."""
    user = messages[-1]["content"]
    return oracle_policy([{"role": "user", "content": user.replace("[[ANSWER:", "[[IGNORED:")}], request)


def policy(messages, request):
    return (steady_policy if request.get("model") == "stub-steady" else oracle_policy)(messages, request)


@pytest.fixture(scope="module")
def pilot(tmp_path_factory, stub_server):
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions
    from medresilience.suite import Suite

    root = tmp_path_factory.mktemp("plan")
    make_tiny_suite(COPIES).save(root / "suite")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY, "sk-test")
        srv = stub_server(policy=policy)
        specs = [parse_model_spec(f"openai:{m},label={m},base_url={srv.base_url},api_key_env={KEY}") for m in ("stub-oracle", "stub-steady")]
        evaluate(Suite.load(root / "suite"), specs, root / "run", EvalOptions(family={"type1": "all"}))
    return root / "run"


def test_every_declared_comparison_pairs_conditions_its_family_writes():
    declared = [f for f in families() if f.measures.comparisons]
    assert {f.name for f in declared} >= {"misleading", "noise", "pressure", "presupposition"}
    for fam in declared:
        known = {*fam.probes.conditions, *([CLEAN] if fam.probes.clean else [])}
        for c in fam.measures.comparisons:
            assert set(c.conditions) <= known, (fam.name, c.key)
            assert c.versus_condition is None or c.versus_condition in known, (fam.name, c.key)
            assert c.given is None or c.given in known, (fam.name, c.key)
        assert len({c.key for c in fam.measures.comparisons}) == len(fam.measures.comparisons), fam.name
        # the headline (the first) and the first comparison of two rates of one model are what
        # `--until` stops on by default: rates the family declares (the label audit's)
        pair = next((c.harm for c in fam.measures.comparisons if c.harm is not None), ())
        assert {fam.measures.comparisons[0].rate, *pair} <= set(fam.measures.rates), fam.name


def test_a_pilot_gives_the_rates_its_units_imply(pilot):
    fam = get("misleading")
    comp = planning.comparison_of(fam, "type1_asr")
    got = planning.from_pilot(pilot, fam, comp, a_model="stub-oracle", b_model="stub-steady")
    # per copy: q1..q3 right clean on both sides (q4 is not: it does not enter), 3 Type 1 probes each;
    # the oracle flips on q1's three and on q3's one misleading sentence, the steady model never
    r = got.rates
    assert (r.p1, r.p2, r.p10, r.p01) == pytest.approx((4 / 9, 0.0, 4 / 9, 0.0))
    assert got.sizes == (3,) * (3 * COPIES) and got.kept == pytest.approx(0.75)
    assert got.pilot["pairs"] == 9 * COPIES and got.pilot["items"] == 3 * COPIES and got.pilot["entered_of"] == 4 * COPIES
    # item differences (b - c) / m: 1, 0, 1/3 -> method of moments: (31.5 - 15) / 30
    assert got.icc == pytest.approx(0.55)
    # the sides the other way round: the same pairs, the rates swapped
    back = planning.from_pilot(pilot, fam, comp, a_model="stub-steady", b_model="stub-oracle")
    assert (back.rates.p1, back.rates.p2) == pytest.approx((0.0, 4 / 9))
    # the plan sizes them with the clustered test (several probes per item)
    row = planning.plan_items(fam, comp, got, 0.8, sims=2000)
    assert row.test == "cluster_mcnemar" and row.power >= 0.8 and row.items == pytest.approx(row.items_entering / 0.75, abs=1)


def test_a_pilot_with_a_smaller_effect_keeps_its_first_rate_and_discordance(pilot):
    fam = get("misleading")
    comp = planning.comparison_of(fam, "type1_asr")
    got = planning.from_pilot(pilot, fam, comp, a_model="stub-oracle", b_model="stub-steady", effect=-0.2)
    assert (got.rates.p1, got.rates.p2, got.rates.discordance) == pytest.approx((4 / 9, 4 / 9 - 0.2, 4 / 9))
    one = planning.with_pairs(got, 1, None)  # the default design: one sampled Type 1 probe per item
    row = planning.plan_items(fam, comp, one, 0.9)
    assert row.test == "mcnemar_exact" and (row.items_entering, row.power) == mcnemar_size(got.rates, 0.9)
    assert row.items == -(-row.items_entering * 4 // 3)  # divided by the share entering (0.75), rounded up


def test_the_cli_plans_from_a_pilot_as_json(pilot):
    r = CliRunner().invoke(
        app, ["plan", "misleading", "type1_asr", "--pilot", str(pilot), "--a", "stub-oracle", "--b", "stub-steady", "--sims", "2000", "--json"]
    )
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)
    assert row["test"] == "cluster_mcnemar" and row["pairs_per_item"] == 3 and row["pilot"]["pairs"] == 45
    assert row["p1"] == pytest.approx(4 / 9) and row["kept"] == pytest.approx(0.75) and row["power"] >= 0.8
    # both sides must be told apart: two models and no --a/--b picks them in order; a third name is refused
    r = CliRunner().invoke(app, ["plan", "misleading", "type1_asr", "--pilot", str(pilot), "--b", "stub-nobody"])
    assert r.exit_code == 2 and "no side matches" in r.output and "stub-oracle / none" in r.output
    r = CliRunner().invoke(app, ["plan", "noise", "--pilot", str(pilot)])
    assert r.exit_code == 2 and "the pilot is a misleading run, not noise" in r.output


def test_the_cli_plans_assumed_rates_and_the_reverse():
    r = CliRunner().invoke(
        app, ["plan", "misleading", "type2_asr", "--p1", "0.3", "--p2", "0.2", "--discordance", "0.2", "--power", "0.8", "--power", "0.9", "--json"]
    )
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    rates = paired_rates(0.3, 0.2, discordance=0.2)
    assert [(x["items"], x["power"]) for x in rows] == [mcnemar_size(rates, 0.8), mcnemar_size(rates, 0.9)]
    assert all(x["test"] == "mcnemar_exact" and x["method"] == "exact" for x in rows)
    r = CliRunner().invoke(
        app, ["plan", "misleading", "type2_asr", "--p1", "0.3", "--p2", "0.2", "--discordance", "0.2", "--items", str(rows[0]["items"]), "--json"]
    )
    (back,) = json.loads(r.output)
    # the smallest effect at the planned size is (up to the exact test's saw-tooth) the effect planned for
    assert back["power"] >= 0.8 and back["effect"] == pytest.approx(0.1, abs=0.004)
    r = CliRunner().invoke(app, ["plan", "misleading", "--p1", "0.3", "--p2", "0.2", "--discordance", "0.2"])
    assert r.exit_code == 0 and "type1_asr" in r.output and "type2_asr" in r.output and "mcnemar exact" in r.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--p1", "1.5", "--p2", "0.2", "--discordance", "0.2"], "setting '--p1': p1 must lie in [0, 1], not 1.5"),
        (["--p1", "0.3", "--p2", "0.2", "--discordance", "0.02"], "setting '--discordance': discordance 0.02 is impossible"),
        (["--p1", "0.3", "--p2", "0.2"], "give one of discordance"),
        (["--p1", "0.3", "--p2", "0.3", "--discordance", "0.2"], "the effect p2 - p1 is 0"),
        (["--p1", "0.3", "--p2", "0.2", "--discordance", "0.2", "--epochs", "3"], "reads one answer per unit"),
        (["--p1", "0.3", "--p2", "0.2", "--discordance", "0.2", "--kept", "0"], "setting '--kept': must lie in (0, 1]"),
        ([], "give the assumed rates"),
    ],
)
def test_bad_input_exits_2_with_the_flag_named(args, message):
    r = CliRunner().invoke(app, ["plan", "misleading", "type2_asr", *args])
    assert r.exit_code == 2 and message in " ".join(r.output.split()), r.output
