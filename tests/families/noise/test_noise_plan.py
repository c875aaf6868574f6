"""`medres plan noise` from a pilot run with epochs: each variant pairs with the original of the
same case and epoch, a case gives one pair per epoch, and the intracluster correlation of a case's
pairs comes from how its flips repeat across epochs (a case misled in every epoch counts for less
than three independent flips)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from medresilience import EvalOptions, evaluate
from medresilience.analyses import planning
from medresilience.cli import app
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.delivery import NoiseOptions, render
from medresilience.families.noise.testing import FakeGenerator
from medresilience.family import get
from medresilience.models.spec import parse_model_spec
from medresilience.suite import Suite


class Misled:
    """Right on every original case; on the 10 red herrings the first case is answered wrong in every
    epoch and the second only at decoding seed 1."""

    def __init__(self, suite: Suite):
        self.texts = {}
        for item in suite.items.values():
            for probe in [None, *suite.probes_for(item.id)]:
                self.texts[render(item, probe, "letter", NoiseOptions())[-1]["content"]] = (item, probe)
        self.first, self.second = sorted(suite.items)[:2]

    def __call__(self, messages, request):
        item, probe = self.texts[messages[-1]["content"]]
        herring = probe is not None and probe.condition == "redherring-10"
        misled = herring and (item.id == self.first or (item.id == self.second and request.get("seed") == 1))
        return "Answer: " + (next(k for k in item.options if k != item.answer) if misled else item.answer)


@pytest.fixture(scope="module")
def pilot(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("noise-plan")
    opts = NoiseBuildOptions(seed=1, abbreviations=(str(FIXTURES / "noise_abbreviations.tsv"),))
    srv = stub_server(policy=FakeGenerator())
    build_noise(FIXTURES / "noise_items.jsonl", root / "suite", parse_model_spec(f"openai:fake-gen,base_url={srv.base_url}"), opts)
    suite = Suite.load(root / "suite")
    srv = stub_server(policy=Misled(suite))
    spec = parse_model_spec(f"openai:m,base_url={srv.base_url},temperature=0.7")
    res = evaluate(suite, [spec], root / "run", EvalOptions(family={"variants": "redherring-10,whitespace"}, epochs=3))
    return root / "run", len(suite.items), res.results.models["m"]["none"]["by_variant"]


def test_a_noise_pilot_pairs_each_variant_with_its_original_per_epoch(pilot):
    run, cases, by_variant = pilot
    fam = get("noise")
    comp = planning.comparison_of(fam, "redherring-10_drop")
    got = planning.from_pilot(run, fam, comp)
    r = got.rates
    flips = 3 + 1  # the first case in all three epochs, the second in one
    assert got.pilot["pairs"] == 3 * cases and got.pilot["epochs"] == 3 and got.sizes == (1,) * cases
    assert (r.p1, r.p2, r.p10, r.p01) == pytest.approx((1.0, 1 - flips / (3 * cases), flips / (3 * cases), 0.0))
    # moments: sum_j m_j (d_j - mean)^2 / (discordance - effect^2) = G + icc * sum_j (m_j - 1)
    d = [1.0, 1 / 3] + [0.0] * (cases - 2)
    mean = flips / (3 * cases)
    v = mean - mean**2
    assert got.icc == pytest.approx((sum(3 * (x - mean) ** 2 for x in d) / v - cases) / (2 * cases))
    assert got.kept == 1.0  # every case enters (no condition must be right first)
    # the pairs of the report's paired McNemar: b right on the original only, c on the variant only
    paired = by_variant["redherring-10"]["paired"]
    assert (paired["n"], paired["b"], paired["c"]) == (got.pilot["pairs"], round(r.p10 * 3 * cases), round(r.p01 * 3 * cases))


def test_the_cli_plans_cases_for_one_and_three_epochs(pilot):
    run = pilot[0]
    r = CliRunner().invoke(app, ["plan", "noise", "redherring-10_drop", "--pilot", str(run), "--epochs", "1", "--epochs", "3", "--sims", "2000", "--json"])
    assert r.exit_code == 0, r.output
    one, three = json.loads(r.output)
    assert (one["test"], one["pairs_per_item"], one["epochs"]) == ("mcnemar_exact", 1, 1)
    assert (three["test"], three["pairs_per_item"], three["epochs"]) == ("cluster_mcnemar", 3, 3)
    # three epochs of correlated answers carry more than one epoch but less than three times as much
    assert three["items"] < one["items"] < 3 * three["items"]
    assert one["power"] >= 0.8 and three["power"] >= 0.8
