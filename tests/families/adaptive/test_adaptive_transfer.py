"""Attacks transfer, end to end on the stub server: a scripted adaptive run (test_adaptive's script,
misleading kind) finds four attacks against `stub-model`; `medres build transfer` writes them as a
misleading suite; `medres eval` replays it on the attacked model (whose script flips exactly as in
the attack) and on a second scripted model (`SecondModel`) whose every answer is known; the transfer
counts and the replayed requests are checked exactly, and every bad input is one error with nothing
written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from test_adaptive import run

from medresilience import EvalOptions, Suite, evaluate, parse_model_spec
from medresilience.families.adaptive.attack import ATTACKER_SYSTEM, CHECKER_SYSTEM
from medresilience.families.adaptive.testing import ScriptedAttack
from medresilience.families.adaptive.traces import full_traces
from medresilience.families.adaptive.transfer import PROVENANCE_KEYS, build_transfer, transfer_rates
from medresilience.families.misleading.delivery import MisleadingOptions
from medresilience.family import get
from medresilience.runtime.errors import ConfigError, InputError
from medresilience.stats.rates import wilson
from medresilience.store import Store
from medresilience.testing.stub import StubServer

#: the attacks the scripted run finds (item -> turn, the label the attacked model gave), budget 3
FOUND = {"q1": (1, "C"), "q2": (2, "B"), "q4": (2, "C"), "q7": (3, "C")}


class SecondModel:
    """Another answering model, scripted by the stress level it is shown: level 1 holds, level 2
    flips to C (the target of q2 and q4), level 3 gives no readable answer; case 4 it gets wrong
    asked plainly. A request of the attack loop's attacker or checker is a test bug."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
        assert str(messages[0].get("content")) not in (ATTACKER_SYSTEM, CHECKER_SYSTEM)
        text = str(messages[-1].get("content", ""))
        self.seen.append(text)
        if "Level 1 detail" in text:
            return "Answer: A"
        if "Level 2 detail" in text:
            return "The context changes things.\nAnswer: C"
        if "Level 3 detail" in text:
            return "It could be A or C."
        return "Answer: B" if text.startswith("Question: Case 4 ") else "Answer: A"


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The adaptive run (misleading kind) whose attacks are transferred."""
    tmp = tmp_path_factory.mktemp("source")
    with StubServer(policy=ScriptedAttack()) as srv:
        run(tmp, srv.base_url, kind="misleading")
    return tmp / "run"


def medres(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "medresilience.cli", "build", *args], capture_output=True, text=True, timeout=120)


def test_build_writes_each_successful_attack_s_final_stress_with_its_provenance(source, tmp_path):
    done = medres("transfer", str(source), "--out", str(tmp_path / "t"))
    assert done.returncode == 0, done.stderr
    assert "4 of 4 successful attacks as 4 Type 1 probes on 4 items" in " ".join(done.stdout.split())
    suite = Suite.load(tmp_path / "t")
    assert suite.manifest.family == "misleading"
    made = suite.manifest.model_extra["built_from"]
    assert made["adaptive_run"] == str(source.resolve()) and made["models"] == ["stub-model"]
    assert (made["attacks_found"], made["attacks_written"], made["skipped"], made["setting"]) == (4, 4, {}, "none")
    with Store.read_only(source / "store.sqlite") as store:
        traces = {t["item_id"]: t for t in full_traces(store)}
    got = {}
    for p in suite.probes:
        a = p.meta["attack"]
        assert tuple(a) == PROVENANCE_KEYS
        assert (a["run"], a["model"], a["setting"], a["flipped_source"]) == (str(source.resolve()), "stub-model", "none", True)
        final = traces[p.item_id]["turns"][-1]
        assert final["outcome"] == "flipped" and a["turn"] == final["turn"] and a["target_key"] == final["target_key"]
        assert p.condition == "type1" and p.sampled and p.target == a["target"] == traces[p.item_id]["target"]
        assert [(s.option, s.text) for s in p.context] == [(p.target, final["stress"])]
        got[p.item_id] = (a["turn"], a["source_label"])
    assert got == FOUND
    assert suite.items["q1"] == Suite.load(source.parent / "suite").items["q1"]  # the items unchanged


def test_an_attack_replays_as_exactly_the_prompt_the_attacked_model_saw_at_its_turn(source, tmp_path):
    suite = build_transfer(source, tmp_path / "t")
    render = get("misleading").evaluation.render
    with Store.read_only(source / "store.sqlite") as store:
        sent = store.request_messages(p.meta["attack"]["target_key"] for p in suite.probes)
    assert len(sent) == 4
    for p in suite.probes:
        assert render(suite.items[p.item_id], p, "letter", MisleadingOptions()) == sent[p.meta["attack"]["target_key"]], p.item_id
    # the replay on the attacked model makes the very request of the attack (same key): it is stored once
    with StubServer(policy=ScriptedAttack()) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=4,max_retries=0")
        evaluate(Suite.load(tmp_path / "t"), [spec], tmp_path / "replay", EvalOptions())
    with Store.read_only(tmp_path / "replay" / "store.sqlite") as store:
        replayed = store.request_messages(p.meta["attack"]["target_key"] for p in suite.probes)
    assert replayed == sent


def test_a_replay_on_a_second_model_gives_the_exact_transfer_counts(source, tmp_path):
    build_transfer(source, tmp_path / "t")
    second = SecondModel()
    with StubServer(policy=ScriptedAttack()) as a, StubServer(policy=second) as b:
        specs = [
            parse_model_spec(f"openai:stub-model,base_url={a.base_url},concurrency=4,max_retries=0"),
            parse_model_spec(f"openai:stub-b,base_url={b.base_url},concurrency=4,max_retries=0"),
        ]
        res = evaluate(Suite.load(tmp_path / "t"), specs, tmp_path / "replay", EvalOptions())
        assert b.stats.total == 8  # 4 clean questions and 4 attacks: a static suite, no attack loop
    rates = transfer_rates(tmp_path / "replay")
    assert rates["source_run"] == str(source.resolve())
    rows = {r["model"]: r for r in rates["rows"]}
    assert set(rows) == {"stub-model", "stub-b"}
    own, other = rows["stub-model"], rows["stub-b"]
    # the attacked model's own script flips on every attack as it did in the loop: 4 of 4, 3 to the target
    assert own["same_model"] and (own["attacks"], own["right_at_clean"], own["flipped"], own["to_target"], own["held"], own["unread"]) == (4, 4, 4, 3, 0, 0)
    # the second model: q4 wrong asked plainly (nothing to flip); q1 (level 1) held; q2 (level 2) flipped
    # to C, its target; q7 (level 3) unread, never a flip
    assert not other["same_model"] and other["attacked_model"] == "stub-model"
    assert {k: other[k] for k in ("attacks", "right_at_clean", "not_right_at_clean", "flipped", "to_target", "held", "unread", "not_run")} == {
        "attacks": 4,
        "right_at_clean": 3,
        "not_right_at_clean": 1,
        "flipped": 1,
        "to_target": 1,
        "held": 1,
        "unread": 1,
        "not_run": 0,
    }
    assert other["rate"] == wilson(1, 3).as_dict()
    # the replay is an ordinary misleading run: its Type 1 rates count the same units
    block = res.results.block("stub-b")
    t1 = block["overall"]["type1"]
    assert (t1["asr"]["k"], t1["asr"]["n"]) == (2, 3)  # an unread reply counts as a flip there
    assert (t1["asr_read"]["k"], t1["asr_read"]["n"]) == (1, 2)  # and is left out here
    assert (t1["tasr"]["k"], t1["tasr"]["n"]) == (other["to_target"], other["right_at_clean"])
    shown = medres("transfer-rate", str(tmp_path / "replay"), "--json", str(tmp_path / "rates.json"))
    assert shown.returncode == 0, shown.stderr
    assert "stub-b (none) on attacks against stub-model: flipped 1/3 = 33.3%" in " ".join(shown.stdout.split())
    assert json.loads((tmp_path / "rates.json").read_text()) == json.loads(json.dumps(rates))


def test_accepted_adds_every_candidate_the_attacked_model_was_asked(source, tmp_path):
    suite = build_transfer(source, tmp_path / "t", accepted=True)
    turns = sorted((p.item_id, p.meta["attack"]["turn"], p.meta["attack"]["flipped_source"]) for p in suite.probes)
    # q2 held at turn 1; q3 held three times; q5 unread then held twice; q7's first two were rejected
    assert turns == [
        ("q1", 1, True),
        ("q2", 1, False),
        ("q2", 2, True),
        ("q3", 1, False),
        ("q3", 2, False),
        ("q3", 3, False),
        ("q4", 2, True),
        ("q5", 1, False),
        ("q5", 2, False),
        ("q5", 3, False),
        ("q7", 3, True),
    ]
    assert len({p.id for p in suite.probes}) == 11
    assert suite.manifest.model_extra["built_from"]["attacks_written"] == 4


def _no_success(messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
    """The scripted attack with an answering model that never moves."""
    if str(messages[0].get("content")) in (ATTACKER_SYSTEM, CHECKER_SYSTEM):
        return ScriptedAttack()(messages, body)
    return "Answer: A"


def test_bad_input_is_one_clear_error_and_nothing_written(source, tmp_path):
    out = tmp_path / "t"
    with pytest.raises(InputError, match=r"no run\.json"):
        build_transfer(source.parent / "suite", out)  # a suite, not a run
    with pytest.raises(InputError, match="no such run directory"):
        build_transfer(tmp_path / "nowhere", out)
    build_transfer(source, tmp_path / "ok")
    with StubServer(policy=SecondModel()) as b:
        evaluate(Suite.load(tmp_path / "ok"), [parse_model_spec(f"openai:stub-b,base_url={b.base_url},max_retries=0")], tmp_path / "replay", EvalOptions())
    with pytest.raises(InputError, match="misleading family, not an adaptive attack run"):
        build_transfer(tmp_path / "replay", out)
    with pytest.raises(InputError, match="not a suite of transferred attacks"):
        transfer_rates(source)  # the attack run itself is no replay
    no_store = tmp_path / "no-store"
    no_store.mkdir()
    shutil.copy(source / "run.json", no_store / "run.json")
    with pytest.raises(InputError, match="store is missing"):
        build_transfer(no_store, out)
    with pytest.raises(ConfigError, match="no attack succeeded under setting caution"):
        build_transfer(source, out, setting="caution")
    with StubServer(policy=_no_success) as srv:
        run(tmp_path / "held", srv.base_url, kind="misleading")
    with pytest.raises(ConfigError, match="no attack succeeded under setting none"):
        build_transfer(tmp_path / "held" / "run", out)
    with StubServer(policy=ScriptedAttack()) as srv:
        run(tmp_path / "noise", srv.base_url, kind="noise")
    with pytest.raises(ConfigError, match=r"its 4 successful attacks \(4 noise\) are none of the misleading kind"):
        build_transfer(tmp_path / "noise" / "run", out)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".t.")]
    done = medres("transfer", str(tmp_path / "noise" / "run"), "--out", str(out))
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert "clinical-noise family asks its cases with its own prompt" in " ".join(done.stderr.split())
    assert not out.exists()


def test_a_moved_suite_is_named_and_found_with_suite(source, tmp_path):
    moved = tmp_path / "run"
    shutil.copytree(source, moved)
    config = json.loads((moved / "run.json").read_text())
    config["suite"]["path"] = str(tmp_path / "gone")
    (moved / "run.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="give its directory with --suite"):
        build_transfer(moved, tmp_path / "t")
    assert len(build_transfer(moved, tmp_path / "t", suite_dir=source.parent / "suite").probes) == 4
    # a suite changed since the run (a whole suite of its own) is refused by the run's recorded checksums
    was = Suite.load(source.parent / "suite")
    changed = [i.model_copy(update={"question": i.question.replace("crushing", "dull")}) for i in was.items.values()]
    Suite(was.manifest, changed, was.probes).save(tmp_path / "other-suite")
    with pytest.raises(InputError, match="not the suite run"):
        build_transfer(moved, tmp_path / "t2", suite_dir=tmp_path / "other-suite")
    assert not (tmp_path / "t2").exists()
