"""`--batch` on the builds of the other families: `medres build noise`, `medres build pressure` (its
claims, written by the misleading builder) and `medres build presupposition` in one round send
their stages to the local batch server (the stub's OpenAI files + batches, answered by the same
policy as its chat completions), exit 3 while a batch is in progress, collect on the next run and
end with the suite files and the stored calls of the same build made live against the same stub;
noise also through `--batch files` with the engine's output file brought back by
`--batch-results`. Refused in one line: a presupposition loop of several rounds (sequential by
nature) and a build that would call no model (`--batch anthropic`: test_batch_builds_anthropic.py).
`--batch openai --dry-run`
counts the first stage's calls before the build and none after it. No network: every server is on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from conftest import shared_data, tiny_items_and_bundles
from medresilience.cli import app
from medresilience.families.misleading.testing import FakeGenerator as FakeMisleading
from medresilience.families.noise.testing import FakeGenerator as FakeNoise
from medresilience.families.presupposition.testing import FakePresupposition
from medresilience.runtime.fileio import write_jsonl
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer
from test_batch_commands import _calls

WAITING = 3
SUITE_FILES = ("suite.json", "items.jsonl", "probes.jsonl")
runner = CliRunner()


@pytest.fixture(autouse=True)
def _fixed_stamp(monkeypatch):
    """Both builds write the same `created` (SOURCE_DATE_EPOCH), so their manifests can be compared byte for byte."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def _until_done(args: list[str], rounds: int = 30) -> list:
    """Reruns the command until it stops waiting; every run before the last exits 3."""
    runs = []
    for _ in range(rounds):
        runs.append(runner.invoke(app, args))
        if runs[-1].exit_code != WAITING:
            break
    return runs


def _dry_run(build, url: str, out: str) -> str:
    """The build's `--batch openai --dry-run` output (it exits 0 and writes nothing)."""
    dry = runner.invoke(app, [*build(url, out), "--batch", "openai", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    return " ".join(dry.output.split())


def _live_and_batch(policy, eps: BatchEndpoints, build, *batch_opts: str, first: str) -> tuple[object, list, int]:
    """The build made live, then the same build as batches against the same stub: the live run,
    the batch runs, and how many chat completions the batch runs made live. Before the live build
    its dry run counts the `first` stage's calls (and sends nothing); after it, nothing is left:
    the dry run counted the very requests the build sent."""
    with StubServer(policy=policy, batches=eps) as srv:
        dry = _dry_run(build, srv.base_url, "live")
        assert dry.startswith(first) and "live no price, batch no price" in dry and srv.stats.total == 0, dry
        live = runner.invoke(app, build(srv.base_url, "live"))
        assert live.exit_code == 0, live.output
        assert _dry_run(build, srv.base_url, "live").startswith("nothing left to send: every planned call is stored")
        before = srv.stats.by_outcome.get("ok", 0)
        runs = _until_done([*build(srv.base_url, "batch"), "--batch", *batch_opts])
        made_live = srv.stats.by_outcome.get("ok", 0) - before
    return live, runs, made_live


def _same_build(tmp_path: Path, work: str = ".build") -> None:
    """The batch build wrote the live build's suite files and holds its stored calls."""
    for name in SUITE_FILES:
        assert (tmp_path / "batch" / name).read_text() == (tmp_path / "live" / name).read_text(), name
    live_calls = _calls(tmp_path / f"live{work}" / "store.sqlite")
    assert live_calls and _calls(tmp_path / f"batch{work}" / "store.sqlite") == live_calls


def _summary(run) -> str:
    """What a build says it kept and why, up to its call counts (which differ: a rerun reuses stored calls)."""
    said = " ".join(run.output.split())
    return said[said.index("kept ") : said.index("calls:")]


def _noise_build(tmp_path: Path, *extra: str):
    def build(url: str, out: str) -> list[str]:
        spec = f"openai:fake-gen,base_url={url},concurrency=4,max_retries=0"
        return ["build", "noise", "--items", str(shared_data("medqa", "us_4options_test_even.jsonl")), "--out", str(tmp_path / out)] + [
            "--limit",
            "4",
            "--seed",
            "2",
            "--name",
            "noise-batch",
            "--generator",
            spec,
            *extra,
        ]

    return build


# the checker (the same fake) flags a red herring of some cases (replaced by the generator, then read again) and finds some rewrites unequal
NOISE = FakeNoise(invalid_json=0.3, flag_one=0.4, not_equivalent=0.3)


def test_build_noise_sends_its_stages_as_batches_and_writes_the_live_builds_suite(tmp_path):
    eps = BatchEndpoints(BatchFaults(polls=0, seed=3, rate_expired=0.1))  # a tenth of the requests expire once: sent again
    build = _noise_build(tmp_path, "--verify", "__SELF__")

    def with_checker(url: str, out: str) -> list[str]:
        return [a.replace("__SELF__", f"openai:fake-gen,base_url={url},concurrency=4,max_retries=0") for a in build(url, out)]

    live, runs, made_live = _live_and_batch(NOISE, eps, with_checker, "openai", first="fake-gen: 8 calls")
    codes = [r.exit_code for r in runs]
    assert codes[-1] == 0 and set(codes[:-1]) == {WAITING} and len(codes) >= 3, [r.output for r in runs]
    first = " ".join(runs[0].output.split())
    # the red herrings and the rewrites need none of each other's replies: the first run submits both (two batches)
    assert first.count("submitted, 4 calls") == 2 and "waiting for a batch: 8 calls" in first, first
    assert made_live == 0 and not eps.paid_twice() and not eps.duplicates
    _same_build(tmp_path)
    assert _summary(runs[-1]) == _summary(live) and "checker fake-gen: red herrings of" in _summary(live)
    assert list((tmp_path / "batch.build" / "batches").glob("medres-*.jsonl"))


def _engine_output(request_file: Path, out_file: Path, url: str) -> None:
    """What an engine's batch runner (vLLM's run_batch) writes for a request file: one output line
    per request, its chat completion made here against the stub's live endpoint."""
    lines = []
    for n, raw in enumerate(request_file.read_text().splitlines()):
        req = json.loads(raw)
        body = httpx.post(url[: -len("/v1")] + req["url"], json=req["body"], timeout=30).json()
        lines.append({"id": f"vllm-{n}", "custom_id": req["custom_id"], "response": {"status_code": 200, "request_id": f"r-{n}", "body": body}, "error": None})
    out_file.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_build_noise_through_batch_files_and_your_engines_output(tmp_path):
    build = _noise_build(tmp_path, "--variants", "redherring-5,rewrite")
    with StubServer(policy=FakeNoise()) as srv:
        live = runner.invoke(app, build(srv.base_url, "live"))
        assert live.exit_code == 0, live.output
        args = [*build(srv.base_url, "batch"), "--batch", "files"]
        first = runner.invoke(app, args)
        assert first.exit_code == WAITING, first.output
        assert "vllm.entrypoints.openai.run_batch" in first.output and not (tmp_path / "batch" / "suite.json").exists()
        files = sorted((tmp_path / "batch.build" / "batches").glob("*.jsonl"))
        assert len(files) == 2 and sum(len(f.read_text().splitlines()) for f in files) == 8  # red herrings and rewrites, 4 cases each
        again = runner.invoke(app, args)
        assert again.exit_code == WAITING and "--batch-results" in again.output
        for n, f in enumerate(files):
            _engine_output(f, tmp_path / f"out{n}.jsonl", srv.base_url)
        runs = [runner.invoke(app, [*args, "--batch-results", str(tmp_path / f"out{n}.jsonl")]) for n in range(len(files))]
    assert [r.exit_code for r in runs] == [WAITING, 0], [r.output for r in runs]
    _same_build(tmp_path)


def test_build_noise_dry_run_prices_the_first_stages_live_and_as_a_batch(tmp_path):
    with StubServer(policy=FakeNoise(), batches=BatchEndpoints()) as srv:
        build = _noise_build(tmp_path)
        args = [a.replace("max_retries=0", "max_retries=0,price_input=1000,price_output=4000") for a in build(srv.base_url, "s")]
        dry = runner.invoke(app, [*args, "--batch", "openai", "--dry-run"])
        assert srv.stats.total == 0
    assert dry.exit_code == 0, dry.output
    line = " ".join(dry.output.split())
    assert line.startswith("fake-gen: 8 calls") and "re-asks, the checker's reads and replacements) are not counted" in line
    live_cost, batch_cost = (float(x.replace(",", "")) for x in re.search(r"live \$([\d.,]+), batch \$([\d.,]+)", line).groups())
    assert live_cost > 1 and batch_cost == pytest.approx(live_cost / 2, abs=0.01)
    assert not (tmp_path / "s").exists() and not (tmp_path / "s.build").exists()
    without = runner.invoke(app, [*args, "--dry-run"])
    assert without.exit_code == 2 and "'--dry-run': goes with --batch" in " ".join(without.output.split())


def test_build_noise_refuses_batch_when_no_variant_calls_a_model(tmp_path):
    r = runner.invoke(
        app,
        ["build", "noise", "--items", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "s"), "--variants", "abbreviations", "--batch", "openai"],
    )
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "error: setting '--batch': the variants asked for call no model (abbreviations are substituted from the inventory): build them without --batch"
    ]
    assert not (tmp_path / "s").exists() and not (tmp_path / "s.build").exists()


def test_build_pressure_sends_the_claims_stage_by_stage_and_writes_the_live_builds_suite(tmp_path):
    write_jsonl(tmp_path / "items.jsonl", [item for item, *_ in tiny_items_and_bundles()])

    def build(url: str, out: str) -> list[str]:
        spec = f"openai:fake,base_url={url},concurrency=4"
        return ["build", "pressure", "--from", str(tmp_path / "items.jsonl"), "--out", str(tmp_path / out), "--seed", "5", "--name", "p", "-g", spec]

    eps = BatchEndpoints(BatchFaults(polls=0))
    live, runs, made_live = _live_and_batch(FakeMisleading(), eps, build, "openai", first="fake: 4 calls")
    codes = [r.exit_code for r in runs]
    # the applicability filter, the neutral bundles, their restatements: a batch each
    assert codes == [WAITING, WAITING, WAITING, 0], [r.output for r in runs]
    assert made_live == 0 and len(eps.paid) == 16 and not eps.paid_twice() and not eps.duplicates
    _same_build(tmp_path)
    for name in SUITE_FILES:  # the claims suite in the work directory too
        assert (tmp_path / "batch.build" / "misleading" / name).read_text() == (tmp_path / "live.build" / "misleading" / name).read_text()
    for said in (runs[-1].output, live.output):
        assert "claims: 4 of 4 items, rejected 0, failed 0" in " ".join(said.split())


def test_build_pressure_refuses_batch_without_a_generator(tmp_path):
    write_jsonl(tmp_path / "items.jsonl", [item for item, *_ in tiny_items_and_bundles()])
    r = runner.invoke(app, ["build", "pressure", "--from", str(tmp_path / "items.jsonl"), "--out", str(tmp_path / "s"), "--batch", "openai"])
    assert r.exit_code == 2 and " ".join(r.output.split()).startswith("error: setting '--batch': without --generator this build calls no model")
    assert not (tmp_path / "s").exists()


MYTHS = [
    ("Breast cancer", "A lump that does not hurt cannot be cancer.", "Most breast cancers are painless when found."),
    ("Lung cancer", "People who never smoked cannot get lung cancer.", "A share of lung cancers occur in people who never smoked."),
    ("Colon cancer", "Colon cancer only affects old people.", "Colon cancer is rising in adults under fifty."),
    ("Skin cancer", "Dark skin never gets melanoma.", "Melanoma occurs in every skin type, often found later in darker skin."),
]


def _myths(path: Path) -> Path:
    path.write_text("".join(json.dumps({"cancer": c, "myth": m, "fact": f, "source": "test"}) + "\n" for c, m, f in MYTHS))
    return path


def _presupposition(tmp_path: Path, round_size: int):
    def build(url: str, out: str) -> list[str]:
        gen, ver = (f"openai:{m},base_url={url},concurrency=4,max_retries=0" for m in ("fake-gen", "fake-ver"))
        return ["build", "presupposition", "--myths", str(_myths(tmp_path / "myths.jsonl")), "--out", str(tmp_path / out)] + [
            "--generator",
            gen,
            "--verifier",
            ver,
            "--verify",
            ver,
            "--questions",
            "2",
            "--round-size",
            str(round_size),
            "--seed",
            "3",
            "--name",
            "pp",
        ]

    return build


def test_build_presupposition_in_one_round_goes_stage_by_stage_to_the_live_builds_suite(tmp_path):
    eps = BatchEndpoints(BatchFaults(polls=0))
    fake = FakePresupposition(invalid_json=0.3, unreadable=0.2, bad_category=0.3, unsound=0.3, salt="b1")
    live, runs, made_live = _live_and_batch(fake, eps, _presupposition(tmp_path, 4), "openai", first="fake-gen: 4 calls")
    codes = [r.exit_code for r in runs]
    # generate (+ its re-asks), respond, verify, categorise (+ its re-asks), check: a batch each
    assert codes[-1] == 0 and set(codes[:-1]) == {WAITING} and len(codes) >= 6, [r.output for r in runs]
    assert made_live == 0 and not eps.paid_twice() and not eps.duplicates
    _same_build(tmp_path)
    assert _summary(runs[-1]) == _summary(live)


def test_build_presupposition_refuses_batch_for_a_loop_of_several_rounds(tmp_path):
    r = runner.invoke(app, [*_presupposition(tmp_path, 1)("http://127.0.0.1:9/v1", "s"), "--batch", "openai"])
    assert r.exit_code == 2
    said = " ".join(r.output.split())
    assert said == (
        "error: --batch: the adversarial loop's 4 rounds are sequential (each round's prompts show examples the last round's verdicts picked), "
        "so a batch would take three round trips a round; run it live (without --batch), or in one round (--round-size 4)"
    )
    assert not (tmp_path / "s").exists() and not (tmp_path / "s.build").exists()
