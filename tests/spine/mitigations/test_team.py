"""The `team` setting end to end against the stub server playing a scripted team (testing.stub's
scripted_team, keyed on the team's prompts): each level's calls and final answer known exactly
(basic, intermediate with and without early agreement, advanced, the adaptive triage, the monitor's
note); an unread triage or recruitment and a unit over its call or token limit (recorded, counted,
never scored, and a rerun makes no call); the option parsing; a judged family; results.json, the
report section and the trade-off rows; and a kill -9 mid-discussion resumed with no call repeated."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from medresilience import mitigations
from medresilience.families.presupposition.probe import PresuppositionProbe, probe_id
from medresilience.mitigations.team import agreed, read_experts, read_level, read_position, read_teams
from medresilience.records import Item
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import ConfigError
from medresilience.store import Store
from medresilience.suite import Suite, SuiteManifest
from medresilience.testing.stub import Faults, StubServer, scripted_team

#: the experts of the sample suite's team: agree on C after one round of discussion
CONVERGE = {"cardiologist": ["B", "C"], "nephrologist": ["C"], "pharmacist": ["D", "C"]}
#: never agree: B, C and D throughout
SPLIT = {"cardiologist": ["B"], "nephrologist": ["C"], "pharmacist": ["D"]}
NOTE = "- The context's claim about the threshold may be false."


def run_team(loop_runs, tmp_path: Path, name: str, policy, out: str = "run", limit: int = 2, settings: tuple[str, ...] = ()):
    """Run `name` (and `settings`) on the sample suite; (results, calls sent, calls sent by a rerun)."""
    return loop_runs.twice(tmp_path / out, policy, EvalOptions(settings=(*settings, name), limit=limit))


def team_rows(out: Path, name: str) -> tuple[list, list[dict], dict]:
    """(unit_id, status, text, error, label, score status) per unit of `name`; the summaries; role -> count."""
    with Store(out / "store.sqlite") as st:
        units = st.conn.execute(
            "SELECT u.unit_id, c.status, c.text, c.error, s.label, s.status FROM units u LEFT JOIN calls c ON c.key = u.key "
            "LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring WHERE u.setting = ? ORDER BY u.unit_id",
            (name,),
        ).fetchall()
        summaries = [json.loads(t) for (t,) in st.conn.execute("SELECT text FROM calls WHERE model = 'team' ORDER BY key")]
        roles = dict(st.conn.execute("SELECT role, COUNT(*) FROM unit_calls GROUP BY role").fetchall())
    return units, summaries, roles


def requests_of(out: Path, what: str) -> list[list[dict]]:
    """The stored messages of every team call of one kind (the summaries' turns say which)."""
    with Store(out / "store.sqlite") as st:
        summaries = [json.loads(t) for (t,) in st.conn.execute("SELECT text FROM calls WHERE model = 'team'")]
        keys = [t["key"] for s in summaries for t in s["turns"] if t["what"] == what]
        return [st.request(k)["messages"] for k in keys]


# ------------------------------------------------------------------ the options and the readers


def test_the_setting_is_configured_in_its_name():
    plain = mitigations.get("team")
    assert (plain.agent.mode, plain.agent.experts, plain.agent.rounds, plain.agent.monitor, plain.agent.moderator) == ("adaptive", 3, 2, False, None)
    s = mitigations.get("team,mode=intermediate,experts=4,rounds=3,calls=20,tokens=5000")
    assert (s.agent.mode, s.agent.experts, s.agent.rounds, s.agent.calls, s.agent.tokens) == ("intermediate", 4, 3, 20, 5000)
    assert s.apply([{"role": "user", "content": "q"}]) == [{"role": "user", "content": "q"}] and s.models == ()
    two = mitigations.get("team:openai:mod,base_url=http://127.0.0.1:9/v1,monitor=openai:mon,base_url=http://127.0.0.1:8/v1,rounds=1")
    assert two.agent.moderator.model == "mod" and two.agent.moderator.base_urls == ["http://127.0.0.1:9/v1"]
    assert two.agent.monitor and two.agent.monitor_spec.model == "mon" and two.agent.monitor_spec.base_urls == ["http://127.0.0.1:8/v1"]
    assert two.agent.rounds == 1 and {m.model for m in two.models} == {"mod", "mon"}  # served and recorded with the run
    assert mitigations.get("team:monitor=self").agent.monitor_spec is None
    assert plain.agent.marker != s.agent.marker != mitigations.get("team:monitor=self").agent.marker
    for bad, why in [
        ("team:colour=red", "unknown option 'colour'"),
        ("team,rounds=0", "rounds must be from 1 to 10, got 0"),
        ("team,experts=many", "experts must be a whole number from 2 to 10, got 'many'"),
        ("team,mode=expert", "mode must be one of adaptive, basic, intermediate, advanced, got 'expert'"),
        ("team,monitor=", "monitor= needs a model spec, or self"),
        ("team,rounds=2,rounds=3", "rounds is given twice"),
        ("team,calls=0", "calls must be from 1"),
        ("team:nosuchprovider/m", "the moderator model: cannot read model spec"),
        ("team:openai:m,base_url=http://u:secret@127.0.0.1:9/v1", "the moderator's base URL carries credentials"),
    ]:
        with pytest.raises(ConfigError, match=why) as e:
            mitigations.get(bad)
        assert e.value.setting == f"--setting {bad}"  # one error, naming the setting as given


def test_the_moderator_and_experts_replies_are_read_strictly():
    assert read_level("Intermediate.") == "intermediate" and read_level("advanced, advanced") == "advanced"
    assert read_level("basic or advanced") is None and read_level("hard") is None and read_level("") is None
    three = "Here is the team.\nEXPERT 1: Cardiologist | the heart\nEXPERT 2: Nephrologist\n**EXPERT 3**: Pharmacist | drugs"
    got = read_experts(three, 3)
    assert [(m.role, m.focus) for m in got] == [("Cardiologist", "the heart"), ("Nephrologist", ""), ("Pharmacist", "drugs")]
    assert read_experts(three, 4) is None and read_experts(three, 2) is None  # not the number asked for: unread, never cut or padded
    assert read_experts("EXPERT 1: a\nEXPERT 3: b\nEXPERT 2: c", 3) is None  # numbered out of order
    assert read_experts("EXPERT 1: a\nEXPERT 2: | only a focus", 2) is None  # a line naming no specialty
    teams = "TEAM 1: triage\nMEMBER 1.1: a | x\nMEMBER 1.2: b\nTEAM 2: care\nMEMBER 2.1: c\nMEMBER 2.2: d"
    purposes, members = read_teams(teams, 2, 2)
    assert purposes == ["triage", "care"] and [(m.team, m.role) for m in members] == [(1, "a"), (1, "b"), (2, "c"), (2, "d")]
    assert read_teams(teams, 3, 2) is None and read_teams(teams.replace("MEMBER 2.2: d", ""), 2, 2) is None
    assert read_position("I think so.\nPOSITION: (C) Option c.") == "c option c" and read_position("no line") is None
    assert read_position("POSITION: B\nthen\n**POSITION**: C") == "c"  # the last one
    assert agreed(["c", "c"]) and not agreed(["c", "b"]) and not agreed(["c", None]) and not agreed([])


# ------------------------------------------------------------------ each level: its calls and its answer


def test_basic_one_clinician_answers_in_the_units_own_call(tmp_path, loop_runs):
    name = "team,mode=basic"
    res, sent, rerun = run_team(loop_runs, tmp_path, name, scripted_team(basic="Answer: B"), settings=("none",))
    assert sent == 6 + 6 and rerun == 0  # the none answers, then one call per team unit: no triage, no recruitment
    units, summaries, roles = team_rows(tmp_path / "run", name)
    assert len(units) == 6 and all(u[1:] == ("ok", "Answer: B", None, "B", "valid") for u in units)
    assert {(s["complexity"], s["calls"], s["outcome"], len(s["turns"])) for s in summaries} == {("basic", 1, "answered", 1)}
    assert roles == {"team.summary": 6}  # the answer is the unit's own row: nothing else to link
    with Store(tmp_path / "run" / "store.sqlite") as st:
        key = st.conn.execute("SELECT key FROM units WHERE setting = ? LIMIT 1", (name,)).fetchone()[0]
        system = st.request(key)["messages"][0]["content"]
    assert "answering for a clinical team; answer on your own" in system
    assert res.results.teams["stub-model"][name]["complexity"] == {"basic": 6, "intermediate": 0, "advanced": 0, "unread": 0}


def test_intermediate_experts_discuss_until_they_agree_and_the_moderator_decides(tmp_path, loop_runs):
    name = "team,mode=intermediate"
    res, sent, rerun = run_team(loop_runs, tmp_path, name, scripted_team(positions=CONVERGE))
    # per unit: the recruitment, three first answers, one round of three (then they agree), the decision
    assert sent == 6 * (1 + 3 + 3 + 1) and rerun == 0
    units, summaries, roles = team_rows(tmp_path / "run", name)
    assert all(u[1:] == ("ok", "Answer: C", None, "C", "valid") for u in units)
    s = summaries[0]
    assert (s["complexity"], s["rounds"], s["agreed"], s["calls"], s["outcome"]) == ("intermediate", 1, True, 8, "answered")
    assert [e["role"] for e in s["experts"]] == ["cardiologist", "nephrologist", "pharmacist"]
    assert s["positions"] == [["b", "c", "d"], ["c", "c", "c"]]
    assert [(t["what"], t["who"], t["round"]) for t in s["turns"]] == [
        ("recruit", "moderator", 0),
        ("answer", "expert 1 (cardiologist)", 0),
        ("answer", "expert 2 (nephrologist)", 0),
        ("answer", "expert 3 (pharmacist)", 0),
        ("discuss", "expert 1 (cardiologist)", 1),
        ("discuss", "expert 2 (nephrologist)", 1),
        ("discuss", "expert 3 (pharmacist)", 1),
        ("decision", "moderator", 0),
    ]
    assert roles == {**{f"team.turn{n}": 6 for n in range(1, 8)}, "team.summary": 6}
    # in the round, each expert reads the others' first answers (not its own) after its own
    discussed = requests_of(tmp_path / "run", "discuss")
    first = discussed[0]
    assert first[-2]["role"] == "assistant" and first[-1]["role"] == "user"
    mine = first[-2]["content"]
    others = first[-1]["content"]
    assert mine not in others and "\nPOSITION: C\n" in others and "\nPOSITION: D\n" in others and "POSITION: B" not in others
    # the decision is the family's question with the team's last answers in the system message
    with Store(tmp_path / "run" / "store.sqlite") as st:
        key = st.conn.execute("SELECT key FROM units WHERE setting = ? LIMIT 1", (name,)).fetchone()[0]
        decision = st.request(key)["messages"]
        tokens = st.conn.execute("SELECT prompt_tokens FROM calls WHERE key = ?", (key,)).fetchone()[0]
    assert "You are the moderator who makes the final decision" in decision[0]["content"] and decision[0]["content"].count("POSITION: C") == 3
    assert decision[-1]["role"] == "user" and tokens > 0  # the decision's own tokens are the unit's row
    block = res.results.teams["stub-model"][name]
    assert (block["rounds_per_unit"]["mean"], block["calls_per_unit"]["mean"], block["agreed"]["k"], block["agreed"]["n"]) == (1.0, 8.0, 6, 6)


def test_experts_who_never_agree_discuss_every_round(tmp_path, loop_runs):
    name = "team,mode=intermediate,rounds=2"
    _, sent, _ = run_team(loop_runs, tmp_path, name, scripted_team(positions=SPLIT), limit=1)
    assert sent == 3 * (1 + 3 + 3 * 2 + 1)
    units, summaries, _ = team_rows(tmp_path / "run", name)
    assert {(s["rounds"], s["agreed"], s["calls"]) for s in summaries} == {(2, False, 11)}
    assert all(u[2] == "Answer: B" for u in units)  # the scripted moderator breaks a three-way tie by letter order


def test_advanced_teams_report_and_a_final_call_combines_them(tmp_path, loop_runs):
    # team 1 (cardiologist, nephrologist, pharmacist) reports C; team 2 (radiologist, surgeon, oncologist) A; team 3 C
    positions = {"cardiologist": ["C"], "nephrologist": ["C"], "pharmacist": ["D"], "neurologist": ["C"], "geriatrician": ["C"], "internist": ["B"]}
    name = "team,experts=3"
    _, sent, rerun = run_team(loop_runs, tmp_path, name, scripted_team(level="advanced", positions=positions), limit=1)
    # per unit: the triage, the recruitment, nine members, three leads, the decision
    assert sent == 3 * (1 + 1 + 9 + 3 + 1) and rerun == 0
    units, summaries, _ = team_rows(tmp_path / "run", name)
    assert all(u[1:] == ("ok", "Answer: C", None, "C", "valid") for u in units)
    s = summaries[0]
    assert (s["complexity"], s["calls"], s["rounds"], len(s["experts"]), s["teams"]) == ("advanced", 15, 0, 9, ["purpose 1", "purpose 2", "purpose 3"])
    assert s["positions"][1] == ["c", "a", "c"]  # the leads' reports
    leads = requests_of(tmp_path / "run", "lead")
    assert len(leads) == 9 and all(
        "You lead the team" in m[-1]["content"] and m[-1]["content"].count("\nPOSITION: ") == 3 for m in leads
    )  # its members' answers


def test_the_triage_picks_the_level_and_a_monitor_note_reaches_every_expert(tmp_path, loop_runs):
    name = "team,monitor=self"
    _, sent, _ = run_team(loop_runs, tmp_path, name, scripted_team(positions=CONVERGE, note=NOTE), limit=1)
    assert sent == 3 * (2 + 1 + 3 + 3 + 1)  # the triage and the monitor together, then as intermediate
    _, summaries, _ = team_rows(tmp_path / "run", name)
    assert [t["what"] for t in summaries[0]["turns"]][:3] == ["triage", "monitor", "recruit"]
    experts = requests_of(tmp_path / "run", "answer") + requests_of(tmp_path / "run", "discuss")
    assert len(experts) == 18 and all(NOTE in m[0]["content"] for m in experts)
    assert not any(NOTE in m[0]["content"] for m in requests_of(tmp_path / "run", "recruit"))
    with Store(tmp_path / "run" / "store.sqlite") as st:
        keys = [k for (k,) in st.conn.execute("SELECT key FROM units WHERE setting = ?", (name,))]
        assert all(NOTE in st.request(k)["messages"][0]["content"] for k in keys)  # the decision sees it too


# ------------------------------------------------------------------ what is not answered


@pytest.mark.parametrize(
    ("name", "policy", "outcome", "error", "calls"),
    [
        ("team", scripted_team(level="quite hard"), "complexity_unread", "team triage unread", 1),
        (
            "team,mode=intermediate",
            scripted_team(recruitment="EXPERT 1: cardiologist\nEXPERT 2: nephrologist"),
            "recruitment_unread",
            "team recruitment unread",
            1,
        ),
        ("team,mode=advanced", scripted_team(recruitment="TEAM 1: all\nMEMBER 1.1: a"), "recruitment_unread", "team recruitment unread", 1),
        ("team,mode=intermediate,calls=3", scripted_team(positions=CONVERGE), "over_calls", "team over its call limit", 1),
        ("team,mode=intermediate,tokens=100", scripted_team(positions=CONVERGE), "over_tokens", "team over its token budget", 1),
    ],
)
def test_an_unread_moderator_or_a_unit_over_its_limits_is_counted_and_never_scored(tmp_path, name, policy, outcome, error, calls, loop_runs):
    res, sent, rerun = run_team(loop_runs, tmp_path, name, policy, limit=1)
    assert sent == 3 * calls and rerun == 0  # a rerun replays the stored calls and stops at the same place
    units, summaries, _ = team_rows(tmp_path / "run", name)
    assert len(units) == 3 and all(u[1] == "error" and u[3].startswith(error) and u[4] is None and u[5] is None for u in units)
    assert res.stats.agent_short == 3 and {s["outcome"] for s in summaries} == {outcome} and {s["calls"] for s in summaries} == {calls}
    block = res.results.teams["stub-model"][name]
    assert (block["not_answered"]["k"], block["not_answered"]["n"], block["outcomes"]) == (3, 3, {outcome: 3})
    if outcome == "recruitment_unread":
        assert summaries[0]["recruitment"].startswith("EXPERT 1" if "intermediate" in name else "TEAM 1")


def test_a_failed_call_stops_its_unit_and_a_rerun_resumes_it(tmp_path, loop_runs):
    name = "team,mode=intermediate"
    opts = EvalOptions(settings=(name,), limit=1)
    with StubServer(policy=scripted_team(positions=CONVERGE), faults=Faults(rate_500=1.0, transient_attempts=99)) as srv:
        res = evaluate(sample_suite(), [loop_runs.spec(srv.base_url, retries=0)], tmp_path / "run", opts)
    assert res.stats.not_run == 3 and any("team units stopped at a call that failed" in s for s in res.stats.stopped)
    with StubServer(policy=scripted_team(positions=CONVERGE)) as srv:
        again = evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "run", opts)
        assert srv.stats.total == 3 * 8
    units, _, _ = team_rows(tmp_path / "run", name)
    assert again.stats.not_run == 0 and all(u[1:] == ("ok", "Answer: C", None, "C", "valid") for u in units)


# ------------------------------------------------------------------ a judged family


def test_a_judged_family_under_the_team(tmp_path, loop_runs):
    items = [Item(id="p0", source="cancer-myth", question="Question p0: since nothing can be done for advanced cancer, how do we plan?", reference="x")]
    probes = [
        PresuppositionProbe(
            id=probe_id("p0", "presupposition"), item_id="p0", condition="presupposition", facets={"category": "no_treatment", "generator": "g"}
        )
    ]
    Suite(SuiteManifest(name="p", family="presupposition"), items, probes).save(tmp_path / "suite")
    suite = Suite.load(tmp_path / "suite")

    def judge(messages, request):
        return json.dumps({"reason": "r", "verdict": "1" if "[corrects]" in messages[-1]["content"] else "-1"})

    policy = scripted_team(positions=CONVERGE, decision=lambda seen: "[corrects] Treatment can still help.", fallback=judge)
    with StubServer(policy=policy) as srv:
        opts = EvalOptions(settings=("none", "team,mode=intermediate"), scoring="judge", family={"judge": f"openai:judge-4,base_url={srv.base_url}"})
        res = evaluate(suite, [loop_runs.spec(srv.base_url)], tmp_path / "run", opts)
    m = res.results.models["stub-model"]
    assert m["team,mode=intermediate"]["overall"]["pcr"]["k"] == 1 and m["none"]["overall"]["pcr"]["k"] == 0
    assert res.results.teams["stub-model"]["team,mode=intermediate"]["units"] == 1


# ------------------------------------------------------------------ the report and the trade-off


def test_the_report_shows_the_teams_and_the_tradeoff_pairs_them_with_none(tmp_path, loop_runs):
    from medresilience.report.build import build_report

    name = "team,mode=intermediate"
    run_team(loop_runs, tmp_path, name, scripted_team(positions=CONVERGE), limit=4, settings=("none",))
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["teams"]["stub-model"][name]["calls"] == 12 * 8
    rep = build_report(tmp_path / "run", tmp_path / "rep")
    team = pd.read_csv(rep.tables["team"]["csv"])
    units = pd.read_csv(rep.tables["team_units"]["csv"])
    row = team.iloc[0]
    assert (row["units"], row["items"], row["complexity_intermediate"], row["experts_mean"], row["rounds_mean"], row["calls_mean"]) == (
        12,
        4,
        12,
        3.0,
        1.0,
        8.0,
    )
    assert (row["agreed_k"], row["agreed_n"], row["not_answered_k"]) == (12, 12, 0)
    assert len(units) == 12 and set(units["roles"]) == {"cardiologist; nephrologist; pharmacist"}
    trade = pd.read_csv(rep.tables["tradeoff"]["csv"])
    mine = trade[trade["setting"] == name]
    calls = mine[mine["metric"] == "calls_per_item"].iloc[0]
    assert (calls["none"], calls["value"]) == (3.0, 24.0)  # three answers against three units x eight calls: summaries are not calls
    tokens = mine[mine["metric"] == "tokens_per_item"].iloc[0]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        spent = st.conn.execute(
            "SELECT SUM(prompt_tokens + completion_tokens) FROM calls WHERE model = 'stub-model' AND "
            "(key IN (SELECT key FROM unit_calls) OR key IN (SELECT key FROM units WHERE setting = ?))",
            (name,),
        ).fetchone()[0]
    assert tokens["value"] == pytest.approx(spent / 4)  # every call's tokens, the decision's included, per item
    assert mine[mine["metric"] != "calls_per_item"]["p"].notna().any()  # the paired effect, tested like any setting's
    page = rep.html.read_text()
    assert "Clinical teams: complexity, recruitment, discussion and cost" in page and "Ended in agreement" in page
    assert "## Clinical teams" in rep.markdown.read_text() and "Search agents" not in page


# ------------------------------------------------------------------ kill -9 mid-discussion


def test_kill_mid_discussion_and_resume_repeats_no_finished_call(tmp_path, loop_runs):
    total = 12 * 8  # 4 items x 3 units; a recruitment, three answers, a round of three and the decision each
    policy = scripted_team(positions=CONVERGE)
    # killed into the experts' answers
    k, c = loop_runs.kill_and_resume(tmp_path, policy, "team,mode=intermediate,rounds=2", loop_runs.calls_done, 30, total)
    assert k == c and len(k[0]) == 12 and sum(1 for r in k[1] if r[1] == "stub-model") == total
    assert sum(1 for r in k[3] if r[3] == "team.summary") == 12


# ------------------------------------------------------------------ the viewer


def test_the_viewer_shows_a_units_whole_discussion_in_order(tmp_path, loop_runs):
    from urllib.parse import quote

    from fastapi.testclient import TestClient

    from medresilience.view.app import create_app
    from medresilience.view.query import open_runs

    name = "team,monitor=self"
    run_team(loop_runs, tmp_path, name, scripted_team(positions=CONVERGE, note=NOTE), limit=1, settings=("none",))
    runs = open_runs([tmp_path / "run"])
    try:
        with TestClient(create_app(runs), base_url="http://127.0.0.1") as c:
            units = [u for u in c.get("/api/units", params={"run": 0}).json()["units"] if u["setting"] == name]
            unit = next(u for u in units if u["condition"] == "clean")
            ev = c.get(f"/api/unit/0/{quote(unit['unit_id'], safe='')}").json()["models"][0]["evidence"]
            html = c.get(f"/unit/0/{quote(unit['unit_id'], safe='')}").text
            plain = next(u for u in c.get("/api/units", params={"run": 0, "setting": "none"}).json()["units"])
            assert c.get(f"/api/unit/0/{quote(plain['unit_id'], safe='')}").json()["models"][0]["evidence"]["trajectory"] is None
    finally:
        for rv in runs:
            rv.close()
    steps = ev["trajectory"]["steps"]
    assert [(s["n"], s["who"], s["what"], s["round"]) for s in steps] == [
        (1, "moderator", "triage", 0),
        (2, "monitor", "monitor", 0),
        (3, "moderator", "recruit", 0),
        (4, "expert 1 (cardiologist)", "answer", 0),
        (5, "expert 2 (nephrologist)", "answer", 0),
        (6, "expert 3 (pharmacist)", "answer", 0),
        (7, "expert 1 (cardiologist)", "discuss", 1),
        (8, "expert 2 (nephrologist)", "discuss", 1),
        (9, "expert 3 (pharmacist)", "discuss", 1),
    ]
    assert steps[0]["text"] == "intermediate" and steps[1]["text"] == NOTE and steps[6]["text"].endswith("POSITION: C")
    assert all(s["status"] == "ok" and s["prompt_tokens"] > 0 for s in steps)
    assert ev["linked"] == [] and ev["call"]["text"] == "Answer: C" and ev["opening"] == len(ev["messages"])  # the decision's messages, all shown
    marks = [
        "The team's discussion",
        "1. moderator: triage",
        "2. monitor: monitor",
        "4. expert 1 (cardiologist): answer",
        "7. expert 1 (cardiologist): discuss, round 1",
        "9. expert 3 (pharmacist): discuss, round 1",
        "Messages sent for the final decision",
        "The moderator's final decision (scored)",
    ]
    html = html.replace("&#39;", "'").replace("&#x27;", "'")  # the page escapes apostrophes
    at = [html.find(m) for m in marks]
    assert -1 not in at and at == sorted(at), dict(zip(marks, at))


def test_what_a_team_cannot_take_is_refused_before_any_call(tmp_path, loop_runs):
    with StubServer(policy=scripted_team()) as srv:
        for opts, why in [
            (EvalOptions(settings=("team",), scoring="logprob", limit=1), "a team's discussion\\): score it with --scoring letter"),
            (EvalOptions(settings=("team",), answer_format="schema", limit=1), "answer_format=schema is not for it"),
        ]:
            with pytest.raises(ConfigError, match=why) as e:
                evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "run", opts)
            assert e.value.setting == "--setting team"
        assert srv.stats.total == 0
