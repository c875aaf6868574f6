"""Runs of the three families for the viewer's tests, made against the stub server with the
trade-off test's policies (misleading: two models under none and caution; presupposition: judged
by a stub judge; noise: red herrings and a rewrite), every reply, judge reason and one probe facet
carrying hostile text, plus a copy of the misleading run whose one score label is hostile; an
agent run (the stub's scripted agent: a search, a read, a cited answer) over a local index whose
passages carry hostile text; and a pressure run (a second turn after each clean answer)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import make_tiny_suite
from medresilience import EvalOptions, evaluate, parse_model_spec
from medresilience.corpus import CorpusIndex, build_index
from medresilience.families.pressure.construct.build import build_pressure
from medresilience.run.bundled_suite import sample_suite
from medresilience.store import ScoreRow, Store
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer, scripted_agent
from test_tradeoff import (
    COPIES,
    SETTINGS,
    Tally,
    misleading_policy,
    noise_policy,
    noise_suite,
    presupposition_policy,
    presupposition_suite,
    spec,
)

SCRIPT = "<script>document.title='pwned'</script>"
IMG = '<img src=x onerror="document.title=1">'
HOSTILE = f" {SCRIPT} {IMG} </td></pre>"


def hostile(policy):
    """The policy's replies with hostile text after the answer, and a judge's reason with it."""

    def answer(messages, request):
        reply = policy(messages, request)
        if reply.startswith("{"):
            data = json.loads(reply)
            data["reason"] = data["reason"] + HOSTILE
            return json.dumps(data)
        return reply + "\n" + HOSTILE

    return answer


def make_runs(root: Path) -> dict[str, Path]:
    mis = make_tiny_suite(n_copies=COPIES)
    mis.save(root / "mis-suite")
    mis = Suite.load(root / "mis-suite")
    with StubServer(policy=hostile(misleading_policy(Tally()))) as srv:
        evaluate(mis, [spec(srv, "stub-a", "model-a"), spec(srv, "stub-b", "model-b", priced=True)], root / "mis", EvalOptions(settings=SETTINGS))
    presup = presupposition_suite(root / "presup-suite")
    # one probe's facet is hostile text (a facet value is shown as a filter option and in each row)
    probes = (root / "presup-suite" / "probes.jsonl").read_text().splitlines()
    first = json.loads(probes[0])
    first["facets"]["generator"] = "gpt-4o" + HOSTILE
    probes[0] = json.dumps(first)
    (root / "presup-suite" / "probes.jsonl").write_text("\n".join(probes) + "\n")
    manifest = json.loads((root / "presup-suite" / "suite.json").read_text())
    if "checksums" in manifest:
        manifest.pop("checksums")
        (root / "presup-suite" / "suite.json").write_text(json.dumps(manifest))
    presup = Suite.load(root / "presup-suite")
    with StubServer(policy=hostile(presupposition_policy(Tally()))) as srv:
        evaluate(
            presup,
            [spec(srv, "stub-a", "model-a")],
            root / "presup",
            EvalOptions(settings=SETTINGS, scoring="judge", family={"judge": f"openai:judge-4,base_url={srv.base_url}"}),
        )
    noise = noise_suite(root)
    with StubServer(policy=hostile(noise_policy(noise, Tally()))) as srv:
        evaluate(noise, [spec(srv, "stub-a", "model-a")], root / "noise", EvalOptions(settings=SETTINGS))
    # a store another tool wrote: one score's label is hostile text
    shutil.copytree(root / "mis", root / "mis-label")
    with Store(root / "mis-label" / "store.sqlite") as st:
        unit = next(u for u in st.unit_results(st.latest_run()) if u.condition == "type1")
        st.write_results([], [ScoreRow(unit.key, unit.scoring, "B" + HOSTILE, "valid", {"read": "written by another tool"}, 0.0)])
    agent_run(root)
    build_pressure(root / "mis-suite", root / "pressure-suite")
    with StubServer() as srv:
        evaluate(Suite.load(root / "pressure-suite"), [parse_model_spec(f"openai:m,base_url={srv.base_url}")], root / "pressure", EvalOptions(limit=2))
    return {
        "misleading": root / "mis",
        "presupposition": root / "presup",
        "noise": root / "noise",
        "label": root / "mis-label",
        "agent": root / "agent",
        "pressure": root / "pressure",
    }


CPR = "High-quality cardiopulmonary resuscitation in cardiac arrest: push hard and fast and allow full chest recoil."
#: the setting's name in the agent run (index path relative to the run's root)
AGENT_SETTING = "agent:{index},steps=4,k=2"


def agent_run(root: Path) -> str:
    """An agent run of one item paired with none; returns the id of the passage it reads."""
    passages = [
        {"id": "p-cpr", "title": "Resuscitation" + HOSTILE, "text": CPR + HOSTILE},
        {"id": "p-ph", "title": "Arterial blood gas", "text": "The arterial pH of a healthy adult is held in a narrow range."},
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    build_index(root / "corpus.jsonl", root / "corpus.sqlite")
    with CorpusIndex(root / "corpus.sqlite") as idx:
        pid = f"P{idx.search('resuscitation cardiac arrest', 1)[0].rowid}"
    script = [("search", "chest compression cardiac arrest"), ("read", pid), ("answer", f'Answer: C\nSOURCE: {pid} "push hard and fast"; P999 "made up"')]
    setting = AGENT_SETTING.format(index=root / "corpus.sqlite")
    with StubServer(policy=scripted_agent(script)) as srv:
        evaluate(
            sample_suite(), [parse_model_spec(f"openai:stub-model,base_url={srv.base_url}")], root / "agent", EvalOptions(settings=("none", setting), limit=1)
        )
    return pid
