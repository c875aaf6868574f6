"""The `agent` setting end to end against the stub server playing a scripted agent: searches,
reads and a final cited answer through the OpenAI tools API and through the plain-text protocol;
an item out of steps or over its token budget (recorded, never scored); malformed tool calls; a
failed step retried, and a step that fails for good resumed by a rerun; the HTTP search backend;
a judged family; and a kill -9 mid-trajectory resumed without repeating a finished step."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from medresilience import mitigations
from medresilience.cli import app
from medresilience.corpus import CorpusIndex, build_index
from medresilience.families.presupposition.probe import PresuppositionProbe, probe_id
from medresilience.mitigations.agent import final_answer, text_actions, tool_actions
from medresilience.models.openai_compatible import OpenAICompatibleModel
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.frame import results_frame
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import ConfigError
from medresilience.store import Store
from medresilience.suite import Suite, SuiteManifest
from medresilience.testing.search_server import SearchServer
from medresilience.testing.stub import Faults, StubServer, scripted_agent

CPR = "High-quality cardiopulmonary resuscitation in cardiac arrest: push hard and fast, allow full chest recoil and keep interruptions of chest compression short."
PASSAGES = [
    {"id": "p-cpr", "title": "Resuscitation", "text": CPR},
    {"id": "p-ph", "title": "Arterial blood gas", "text": "The arterial pH of a healthy adult is held in a narrow range by bicarbonate buffering."},
    {"id": "p-fever", "title": "Fever in infants", "text": "A febrile infant under three months needs urgent evaluation."},
]
ANSWER = 'Answer: C\nSOURCE: {pid} "push hard and fast"; P999 "made up words"'


@pytest.fixture
def index(tmp_path) -> Path:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    build_index(src, tmp_path / "corpus.sqlite")
    return tmp_path / "corpus.sqlite"


def cpr_id(index: Path) -> str:
    with CorpusIndex(index) as idx:
        return f"P{idx.search('resuscitation cardiac arrest', 1)[0].rowid}"


def script(pid: str) -> list[tuple[str, ...]]:
    return [("search", "chest compression cardiac arrest"), ("read", pid), ("answer", ANSWER.format(pid=pid))]


def agent_rows(out: Path) -> tuple[list, list, dict]:
    with Store(out / "store.sqlite") as st:
        units = st.conn.execute(
            "SELECT u.unit_id, c.status, c.text, c.error, s.status FROM units u LEFT JOIN calls c ON c.key = u.key "
            "LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring WHERE u.setting LIKE 'agent:%' ORDER BY u.unit_id"
        ).fetchall()
        summaries = [json.loads(t) for (t,) in st.conn.execute("SELECT text FROM calls WHERE model = 'agent' ORDER BY key")]
        roles = dict(st.conn.execute("SELECT role, COUNT(*) FROM unit_calls GROUP BY role").fetchall())
    return units, summaries, roles


# ------------------------------------------------------------------ the stub and the client


def test_the_stub_plays_a_scripted_agent_as_tool_calls_or_text(loop_runs):
    policy = scripted_agent([("search", "q one"), ("raw", "read", "{bad"), ("answer", "Answer: B")])

    async def go(url):
        async with OpenAICompatibleModel(loop_runs.spec(url)) as model:
            tools = {"tools": mitigations.agent.TOOLS, "max_tokens": 64}
            first = await model.complete([{"role": "user", "content": "q"}], tools)
            convo = [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": first.tool_calls}]
            second = await model.complete(convo + [{"role": "tool", "tool_call_id": "call_0_0", "content": "r"}], tools)
            plain = await model.complete([{"role": "system", "content": "Act with SEARCH: lines"}, {"role": "user", "content": "q"}], {"max_tokens": 64})
            other = await model.complete([{"role": "user", "content": "A. x\nB. y"}], {"max_tokens": 64})
            return first, second, plain, other

    with StubServer(policy=policy) as srv:
        first, second, plain, other = asyncio.run(go(srv.base_url))
    assert first.text == "" and first.finish_reason == "tool_calls"
    assert first.tool_calls == [{"id": "call_0_0", "type": "function", "function": {"name": "search", "arguments": '{"query": "q one"}'}}]
    assert second.tool_calls[0]["function"] == {"name": "read", "arguments": "{bad"}
    assert plain.tool_calls is None and plain.text.endswith("SEARCH: q one")
    assert other.text.startswith("Answer: ")  # not an agent conversation: the fallback policy


def test_actions_and_final_answers_are_read():
    calls = [
        {"id": "a", "function": {"name": "search", "arguments": '{"query": "sepsis fluids"}'}},
        {"id": "b", "function": {"name": "read", "arguments": "{nope"}},
        {"id": "c", "function": {"name": "browse", "arguments": "{}"}},
        {"id": "d", "function": {"name": "read", "arguments": '{"id": ""}'}},
    ]
    got = tool_actions(calls)
    assert [(a.tool, a.arg, bool(a.problem)) for a in got] == [("search", "sepsis fluids", False), ("read", "", True), ("browse", "", True), ("read", "", True)]
    assert "not JSON" in got[1].problem and "unknown tool 'browse'" in got[2].problem
    assert [(a.tool, a.arg) for a in text_actions("Plan.\nSEARCH: sepsis fluids\nread: P3\nREAD:")] == [
        ("search", "sepsis fluids"),
        ("read", "P3"),
        ("read", ""),
    ]
    f = final_answer('Answer: B\nSOURCE: P3 "give fluids early"; [P7]\nsources: W-1 \u201cquoted\u201d')
    assert f.answer == "Answer: B" and [(c.id, c.words) for c in f.citations] == [("P3", "give fluids early"), ("P7", ""), ("W-1", "quoted")]


def test_the_setting_is_configured_in_its_name(index, loop_runs):
    s = mitigations.get(f"agent:{index},steps=5,k=2,tokens=5000,protocol=text")
    assert s.agent.steps == 5 and s.agent.k == 2 and s.agent.tokens == 5000 and s.agent.protocol == "text"
    assert s.apply([{"role": "user", "content": "q"}]) == [{"role": "user", "content": "q"}]
    assert s.texts["backend"].startswith("local index ")
    for bad, why in [
        ("agent:", "needs its configuration"),
        (f"agent:{index},steps=0", "steps must be from 1"),
        (f"agent:{index},protocol=xml", "protocol must be one of"),
        (f"agent:{index},colour=red", "unknown option 'colour'"),
        (f"agent:{index},key_env=X", "key_env= is for a search service URL"),
        ("agent:steps=3", "no search backend given"),
        ("agent:http://127.0.0.1:9/v1,key_env=NO_SUCH_SEARCH_KEY_VAR", "NO_SUCH_SEARCH_KEY_VAR .* is not set"),
    ]:
        with pytest.raises(ConfigError, match=why):
            mitigations.get(bad)
    assert "agent:INDEX.sqlite|URL" in " ".join(mitigations.names())
    from medresilience.run.runner import plan

    with pytest.raises(ConfigError, match="score it with --scoring letter"):
        plan(sample_suite(), [loop_runs.spec("http://127.0.0.1:9/v1")], EvalOptions(settings=(f"agent:{index}",), scoring="logprob", limit=1))


def test_medres_models_says_which_protocol_each_provider_gets(monkeypatch):
    from medresilience.cli import kit
    from medresilience.models.providers import PROVIDERS

    monkeypatch.setattr(kit.console, "_width", 400)  # the private field: undone, the console measures its width again
    r = CliRunner().invoke(app, ["models"])
    assert r.exit_code == 0 and "agent protocol" in r.output and r.output.count("tools (function calling)") == len(PROVIDERS.values())
    no_tools = mitigations.agent.AgentConfig(None, protocol="auto")  # type: ignore[arg-type]
    assert no_tools.protocol_for(parse_model_spec("openai/gpt-4o-mini")) == "tools"


# ------------------------------------------------------------------ end to end


@pytest.mark.parametrize("protocol", ["tools", "text"])
def test_the_agent_searches_reads_and_answers_with_cited_passages(tmp_path, index, protocol, loop_runs):
    pid = cpr_id(index)
    name = f"agent:{index},steps=5,k=2,protocol={protocol}"
    opts = EvalOptions(settings=("none", name), limit=2)
    seen: list[tuple[int, int]] = []
    res, sent, rerun = loop_runs.twice(tmp_path / "run", scripted_agent(script(pid)), opts, progress=lambda d, t: seen.append((d, t)))
    assert rerun == 0  # resumed: no step made twice
    units, summaries, roles = agent_rows(tmp_path / "run")
    assert len(units) == 6 and all(u[1:] == ("ok", "Answer: C", None, "valid") for u in units)  # the SOURCE lines are not the answer
    assert sent == 6 + 6 * 3  # the none answers, then three steps per agent unit
    done = [d for d, _ in seen]
    assert seen[-1] == (sent, sent) and done == sorted(done) and set(done) == set(range(sent + 1))  # every step counted as it ends
    assert roles == {"agent.step1": 6, "agent.step2": 6, "agent.answer": 6, "agent.tool1.1": 6, "agent.tool2.1": 6, "agent.trajectory": 6}
    s = summaries[0]
    assert (s["protocol"], s["outcome"], s["steps"], s["tool_calls"], s["malformed"]) == (protocol, "answered", 3, 2, 0)
    assert s["searches"] == ["chest compression cardiac arrest"] and s["reads"] == [pid]
    assert s["cited"] == [
        {"id": pid, "words": "push hard and fast", "exists": True, "contains": True},
        {"id": "P999", "words": "made up words", "exists": False, "contains": False},
    ]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        costs = st.setting_costs()["stub-model"][name]
        steps = st.conn.execute(
            "SELECT SUM(c.prompt_tokens), COUNT(*) FROM calls c WHERE c.model = 'stub-model' AND c.key IN (SELECT key FROM unit_calls)"
        ).fetchone()
        assert costs["prompt_tokens"] == steps[0] > 0 and steps[1] == 18  # every step's tokens count for the setting
        # the second step's request holds the search's result, as a tool message or a user message
        key2 = st.conn.execute("SELECT key FROM unit_calls WHERE role = 'agent.step2' LIMIT 1").fetchone()[0]
        req = st.request(key2)
        df = results_frame(st, sample_suite())
    last = req["messages"][-1]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        unit_key = st.conn.execute("SELECT key FROM units WHERE setting = ? LIMIT 1", (name,)).fetchone()[0]
        whole = st.request(unit_key)["messages"]
    assert whole[-1] == {"role": "assistant", "content": ANSWER.format(pid=pid)} and len(whole) > len(req["messages"])
    assert last["role"] == ("tool" if protocol == "tools" else "user") and f"[{pid}] Resuscitation (p-cpr)" in last["content"]
    assert ("tools" in req["params"]) == (protocol == "tools")
    assert set(df["setting"]) == {"none", name} and len(df) == 12  # paired with none on the same units
    assert res.results.models["stub-model"][name]


def test_an_item_out_of_steps_or_tokens_is_recorded_and_never_scored(tmp_path, index, loop_runs):
    looping = scripted_agent([("search", "cardiac arrest")])  # never answers
    for limit, out, why in [("steps=3", "a", "agent out of steps: 3 steps"), ("tokens=100", "b", "agent over its token budget")]:
        name = f"agent:{index},{limit}"
        with StubServer(policy=looping) as srv:
            res = evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / out, EvalOptions(settings=(name,), limit=1))
        units, summaries, _ = agent_rows(tmp_path / out)
        assert len(units) == 3 and all(u[1] == "error" and u[3].startswith(why) and u[4] is None for u in units)
        assert res.stats.agent_short == 3 and {s["outcome"] for s in summaries} == {"out_of_steps" if out == "a" else "out_of_tokens"}
        with Store(tmp_path / out / "store.sqlite") as st:
            assert st.unit_statuses() == {"error": 3}
    assert summaries[0]["steps"] == 1  # the token budget ran out after the first step


def test_malformed_tool_calls_are_answered_and_counted(tmp_path, index, loop_runs):
    pid = cpr_id(index)
    steps = [("raw", "search", "{not json"), ("raw", "browse", '{"url": "x"}'), ("raw", "read", '{"id": "P999"}'), ("answer", "Answer: C")]
    with StubServer(policy=scripted_agent(steps)) as srv:
        evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=(f"agent:{index}",), limit=1))
    units, summaries, _ = agent_rows(tmp_path / "run")
    assert all(u[1:] == ("ok", "Answer: C", None, "valid") for u in units)
    assert (summaries[0]["malformed"], summaries[0]["tool_calls"], summaries[0]["reads"], summaries[0]["cited"]) == (2, 3, ["P999"], [])
    with Store(tmp_path / "run" / "store.sqlite") as st:
        key4 = st.conn.execute("SELECT key FROM unit_calls WHERE role = 'agent.answer' LIMIT 1").fetchone()[0]
        tools = [m["content"] for m in st.request(key4)["messages"] if m["role"] == "tool"]
    assert tools[0].startswith("Error: the arguments are not JSON") and "unknown tool 'browse'" in tools[1]
    assert tools[2] == "No passage with id P999 (ids come from search results)."
    assert pid not in " ".join(tools)


def test_a_failed_step_is_retried_and_one_failing_for_good_resumes_on_a_rerun(tmp_path, index, loop_runs):
    pid = cpr_id(index)
    opts = EvalOptions(settings=(f"agent:{index}",), limit=1)
    with StubServer(policy=scripted_agent(script(pid)), faults=Faults(rate_500=1.0, transient_attempts=1)) as srv:
        res = evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "a", opts)
        assert res.stats.errors == 0 and res.stats.retry_waits == 9  # every step failed once, then went through
    assert all(u[1] == "ok" for u in agent_rows(tmp_path / "a")[0])
    with StubServer(policy=scripted_agent(script(pid)), faults=Faults(rate_500=1.0, transient_attempts=99)) as srv:
        res = evaluate(sample_suite(), [loop_runs.spec(srv.base_url, retries=1)], tmp_path / "b", opts)
    assert res.stats.not_run == 3 and "agent units stopped at a step" in " ".join(res.stats.stopped)
    assert all(u[1] is None for u in agent_rows(tmp_path / "b")[0])  # not answered, not scored
    with StubServer(policy=scripted_agent(script(pid))) as srv:
        res = evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "b", opts)
    assert all(u[1:] == ("ok", "Answer: C", None, "valid") for u in agent_rows(tmp_path / "b")[0])


def test_the_agent_searches_a_web_service_through_the_http_backend(tmp_path, monkeypatch, loop_runs):
    docs = [{"id": "web-cpr", "title": "CPR guidance", "text": CPR, "url": "https://example.org/cpr"}]
    monkeypatch.setenv("WEB_SEARCH_KEY", "k-123456")
    with (
        SearchServer(docs, token="k-123456") as web,
        StubServer(policy=scripted_agent(script("web-cpr")[:2] + [("answer", 'Answer: C\nSOURCE: web-cpr "push hard"')])) as srv,
    ):
        name = f"agent:{web.url},key_env=WEB_SEARCH_KEY"
        evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=(name,), limit=1))
        asked = len(web.requests)
    units, summaries, _ = agent_rows(tmp_path / "run")
    assert all(u[1:] == ("ok", "Answer: C", None, "valid") for u in units)
    assert summaries[0]["cited"] == [{"id": "web-cpr", "words": "push hard", "exists": True, "contains": True}]
    assert asked == 2  # one search and one read: three units share them through the store
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "k-123456" not in json.dumps(cfg) and cfg["prompts"]["texts"][f"setting.{name}.backend"] == f"http {web.url}"


# ------------------------------------------------------------------ a judged family


def test_a_judged_family_under_the_agent(tmp_path, index, loop_runs):
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

    policy = scripted_agent([("search", "advanced cancer treatment"), ("answer", "[corrects] Treatment can still help.")], fallback=judge)
    with StubServer(policy=policy) as srv:
        opts = EvalOptions(settings=("none", f"agent:{index}"), scoring="judge", family={"judge": f"openai:judge-4,base_url={srv.base_url}"})
        res = evaluate(suite, [loop_runs.spec(srv.base_url)], tmp_path / "run", opts)
    m = res.results.models["stub-model"]
    assert m[f"agent:{index}"]["overall"]["pcr"]["k"] == 1 and m["none"]["overall"]["pcr"]["k"] == 0


def test_the_noise_family_under_the_agent(tmp_path, index, monkeypatch, loop_runs):
    from conftest import FIXTURES
    from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise

    rows = [json.loads(line) for line in (FIXTURES / "noise_items.jsonl").read_text().splitlines()]
    src = tmp_path / "open.jsonl"
    src.write_text("".join(json.dumps({"id": o["id"], "question": o["question"], "answer": o["options"][o["answer"]]}) + "\n" for o in rows))
    inventory = str(FIXTURES / "noise_abbreviations.tsv")
    built = build_noise(src, tmp_path / "suite", None, NoiseBuildOptions(variants=("abbreviations",), abbreviations=(inventory,)))
    suite = Suite.load(built.out)

    def judge(messages, request):
        same = "<reference>\nIron deficiency anemia\n</reference>" in messages[-1]["content"]
        return json.dumps({"reason": "compared", "verdict": "match" if same else "no_match"})

    agent = scripted_agent([("search", "microcytic anemia ferritin"), ("answer", "Reasoning.\nFINAL DIAGNOSIS: Iron deficiency anemia")])
    name = f"agent:{index}"
    with StubServer(policy=agent) as srv, StubServer(policy=judge) as jsrv:
        opts = EvalOptions(settings=("none", name), family={"mode": "diagnosis", "judge": f"openai:j,base_url={jsrv.base_url}"})
        run = evaluate(suite, [loop_runs.spec(srv.base_url)], tmp_path / "dx", opts)
    o = run.results.models["stub-model"][name]["overall"]
    assert (o["clean_acc"]["k"], o["clean_acc"]["n"]) == (1, 2) and (o["abbreviations_acc"]["k"], o["abbreviations_acc"]["n"]) == (1, 2)
    units, summaries, _ = agent_rows(tmp_path / "dx")
    assert len(units) == 4 and all(u[1] == "ok" for u in units) and {s["steps"] for s in summaries} == {2}
    # epochs of a model that takes no seed: each epoch's steps are calls of their own
    with StubServer(policy=agent) as srv, StubServer(policy=judge) as jsrv:
        unseeded = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},provider=anthropic,api_key_env=STUB_KEY,temperature=0.7")
        opts = EvalOptions(settings=(name,), epochs=2, family={"mode": "diagnosis", "judge": f"openai:j,base_url={jsrv.base_url}"})
        monkeypatch.setenv("STUB_KEY", "stub-key-1")
        run = evaluate(suite, [unseeded], tmp_path / "epochs", opts)
        steps = srv.stats.total
    assert not unseeded.supports("seed") and steps == 2 * 4 * 2 and run.stats.not_run == 0  # 2 epochs x 4 units x 2 steps


def test_the_command_line_runs_the_agent_and_says_what_ran_out_of_steps(tmp_path, index, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with StubServer(policy=scripted_agent([("search", "cardiac arrest")])) as srv:
        args = [
            "eval",
            "--model",
            f"openai:stub-model,base_url={srv.base_url}",
            "--setting",
            "none",
            "--setting",
            f"agent:{index},steps=2",
            "--limit",
            "1",
            "--out",
            "run",
        ]
        r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "agent: 3 units used their steps or token budget without a final answer" in " ".join(r.output.split())


# ------------------------------------------------------------------ kill -9 mid-trajectory


def test_kill_mid_trajectory_and_resume_repeats_no_finished_step(tmp_path, index, loop_runs):
    pid = cpr_id(index)
    total = 12 * 3  # 4 items x 3 units, three steps each

    def steps_done(db: Path) -> set[str]:
        return loop_runs.calls_done(db, but_text="Answer: C")

    # killed into the second round
    k, c = loop_runs.kill_and_resume(tmp_path, scripted_agent(script(pid)), f"agent:{index}", steps_done, 14, total, tool_calls=True)
    assert k == c and len(k[0]) == 12 and sum(1 for r in k[1] if r[1] == "stub-model" and r[4]) == 24
    assert re.search(r"agent", json.dumps(k[3]))


# ------------------------------------------------------------------ the report


def test_the_report_shows_steps_searches_citations_and_the_paired_effect(tmp_path, index, loop_runs):
    from medresilience.report.build import build_report

    pid = cpr_id(index)
    follow = scripted_agent(script(pid))

    def policy(messages, body):  # the first step searches the whole question, context and all
        if body.get("tools") and not any(m["role"] == "assistant" for m in messages):
            question = next(m["content"] for m in messages if m["role"] == "user")
            return {
                "content": None,
                "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "search", "arguments": json.dumps({"query": question})}}],
            }
        return follow(messages, body)

    name = f"agent:{index},k=2"
    with StubServer(policy=policy) as srv:
        evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=("none", name), limit=4))
    rep = build_report(tmp_path / "run", tmp_path / "rep")
    agent = pd.read_csv(rep.tables["agent"]["csv"])
    units = pd.read_csv(rep.tables["agent_units"]["csv"])
    row = agent.iloc[0]
    assert (row["units"], row["items"], row["steps_mean"], row["tool_calls_mean"], row["short_k"]) == (12, 4, 3.0, 2.0, 0)
    # every stressed unit searched its own question, injected text and all; clean units are left out
    assert (row["searched_injected_k"], row["searched_injected_n"]) == (8, 8) and units["searched_injected"].isna().sum() == 4
    assert (row["cited_exist_k"], row["cited_exist_n"], row["cited_contain_k"], row["cited_contain_n"]) == (12, 24, 12, 12)
    assert row["cited_exist_p"] == 0.5 and row["cited_contain_p"] == 1.0
    trade = pd.read_csv(rep.tables["tradeoff"]["csv"])
    mine = trade[trade["setting"] == name]
    assert {"tokens_per_item", "calls_per_item"} <= set(mine["metric"]) and mine["p"].notna().any()
    calls = mine[mine["metric"] == "calls_per_item"].iloc[0]
    assert (calls["none"], calls["value"]) == (3.0, 9.0)  # three answers against three units x three steps: tool rows are not calls
    tokens = mine[mine["metric"] == "tokens_per_item"].iloc[0]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        steps = st.conn.execute("SELECT SUM(prompt_tokens + completion_tokens) FROM calls WHERE model = 'stub-model' AND tool_calls IS NOT NULL").fetchone()[0]
        last = st.conn.execute(
            "SELECT SUM(c.prompt_tokens + c.completion_tokens) FROM calls c JOIN unit_calls l ON l.key = c.key WHERE l.role = 'agent.answer'"
        ).fetchone()[0]
    assert tokens["value"] == pytest.approx((steps + last) / 4)  # every step's tokens, per item
    page = rep.html.read_text()
    assert "Search agents: steps, searches and citations" in page and "Searched for the injected text" in page
    assert "## Search agents" in rep.markdown.read_text()


# ------------------------------------------------------------------ chunks (the toy family)


def test_chunks_give_the_same_trajectories_as_one_plan(tmp_path, index, toy_family, loop_runs):
    from medresilience.run.runner import execute, execute_plan, plan
    from toy_family import answerer, make_toy_suite

    suite = make_toy_suite(5)
    opts = EvalOptions(settings=("none", f"agent:{index},k=1"))
    policy = scripted_agent([("search", "toy question"), ("answer", "Answer: B")], fallback=answerer)
    stores = []
    with StubServer(policy=policy) as srv:
        specs = [loop_runs.spec(srv.base_url)]
        for chunk in (None, 3):
            with Store(tmp_path / f"s{chunk}.sqlite") as st:
                st.record_run("r", {})
                if chunk is None:
                    stats = asyncio.run(execute(plan(suite, specs, opts), specs, st))
                else:
                    stats = asyncio.run(execute_plan(suite, specs, opts, st, chunk_units=chunk))
                assert stats.planned_units == 20 and stats.not_run == 0
                stores.append(
                    (
                        sorted(st.conn.execute("SELECT key, model, status, text, tool_calls FROM calls").fetchall()),
                        sorted(st.conn.execute("SELECT model, unit_id, key, role FROM unit_calls").fetchall()),
                        sorted(st.conn.execute("SELECT key, scorer, label, status FROM scores").fetchall()),
                    )
                )
    assert stores[0] == stores[1] and len(stores[0][1]) == 10 * 4  # per agent unit: step, tool, answer, trajectory
    assert sum(1 for _, _, label, _ in stores[0][2] if label == "B") >= 10  # every agent answer scored


def test_a_hanging_search_service_stops_after_repeated_failures_and_the_units_are_not_run(tmp_path, monkeypatch, loop_runs):
    """Three agent units against a search service that never answers: the first two searches time
    out after four attempts each, then the breaker (MEDRES_STOP_AFTER_AUTH_ERRORS=2, the model
    endpoints' limit) stops the service, so the third unit fails with nothing sent. Each unit is
    counted as not run, with the reason, and resumes on a rerun."""
    monkeypatch.setenv("MEDRES_STOP_AFTER_AUTH_ERRORS", "2")
    monkeypatch.setenv("MEDRES_SEARCH_TIMEOUT", "0.3")
    with SearchServer([], hang=True) as web, StubServer(policy=scripted_agent(script("web-cpr"))) as srv:
        res = evaluate(sample_suite(), [loop_runs.spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=(f"agent:{web.url}",), limit=1))
        asked = len(web.requests)
    assert asked == 2 * 4
    stats = res.stats
    assert stats.not_run == 3 and any("3 agent units stopped" in line for line in stats.stopped), stats
    assert any("stopped after 2 failed requests in a row" in s for s in stats.error_samples), stats.error_samples
    units, _, _ = agent_rows(tmp_path / "run")
    assert len(units) == 3 and all(u[1] is None for u in units)  # no answer stored: a rerun resumes them
