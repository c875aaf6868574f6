"""The evidence viewer (`medres view`) over runs of the three families made against the stub
server (tests/end_to_end/view_runs.py): the JSON API's counts against each run's results.json,
filters and their stable URLs, a unit's evidence (its clean pair, the stressed part marked, how
the label was read, the judge), an agent unit's whole trajectory, a second turn's two turns, the
static export and its cap, bad filters, and that nothing is written to a run (the store file byte
for byte, and no route but GET)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from medresilience import EvalOptions, evaluate, parse_model_spec
from medresilience.cli import app as cli_app
from medresilience.corpus import build_index
from medresilience.run.bundled_suite import sample_suite
from medresilience.store import Store
from medresilience.testing.stub import StubServer, scripted_agent
from medresilience.view.app import create_app
from medresilience.view.export import MARKER, export_site, unit_file
from medresilience.view.query import open_runs
from view_runs import CPR, make_runs

ORDER = ("misleading", "presupposition", "noise", "label", "agent", "pressure")
AGENT_RUN, PRESSURE_RUN = ORDER.index("agent"), ORDER.index("pressure")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("view")
    dirs = make_runs(root)
    before = {k: _digest(d / "store.sqlite") for k, d in dirs.items()}
    runs = open_runs([dirs[k] for k in ORDER])
    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    yield {"dirs": dirs, "runs": runs, "client": client, "before": before, "root": root}
    client.close()
    for rv in runs:
        rv.close()


def api(served, **params) -> dict:
    r = served["client"].get("/api/units", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def results(served, family: str) -> dict:
    return json.loads((served["dirs"][family] / "results.json").read_text())


def test_misleading_counts_match_results_json(served):
    res = results(served, "misleading")
    for model in ("model-a", "model-b"):
        for setting in ("none", "caution"):
            block = res["models"][model][setting]["overall"]
            for cond in ("type1", "type2"):
                flips = api(served, run=0, model=model, setting=setting, condition=cond, outcome="flip")
                assert flips["total"] == block[cond]["asr"]["k"], (model, setting, cond)
                assert flips["counts"]["outcome"]["flip"] == block[cond]["asr"]["k"]
            targeted = api(served, run=0, model=model, setting=setting, condition="type1", outcome="flip_to_target")
            assert targeted["total"] == block["type1"]["tasr"]["k"]
            # stub-a follows every misleading sentence: some of its flips are targeted
    assert api(served, run=0, model="model-a", setting="none", condition="type1", outcome="flip_to_target")["total"] > 0
    everything = api(served, run=0)
    assert everything["total"] == 384 and everything["counts"]["model"] == {"model-a": 192, "model-b": 192}
    assert everything["facets"] == ["source", "content_type", "provenance", "target"] and everything["family"] == "misleading"
    # the report's strata by source dataset: an item fact, filtered like a facet
    for source, block in res["models"]["model-a"]["none"]["by_source"].items():
        got = api(served, run=0, model="model-a", setting="none", condition="type1", outcome="flip", source=source)
        assert got["total"] == block["type1"]["asr"]["k"] and all(u["facets"]["source"] == source for u in got["units"])
    assert set(res["models"]["model-a"]["none"]["by_source"]) == {"tiny", "tiny2"}


def test_noise_flips_match_results_json(served):
    res = results(served, "noise")
    for setting in ("none", "caution"):
        block = res["models"]["model-a"][setting]["overall"]
        for cond in ("redherring-10", "rewrite"):
            got = api(served, run=2, setting=setting, condition=cond, outcome="flip")
            assert got["total"] == block[f"{cond}_flip"]["k"], (setting, cond)
    flips = api(served, run=2, outcome="flip")
    assert all(u["condition"] != "clean" and "flip" in u["outcomes"] for u in flips["units"])
    assert "flip_to_target" not in flips["outcomes"]  # noise declares no target


def test_presupposition_counts_match_results_json(served):
    res = results(served, "presupposition")
    for setting in ("none", "caution"):
        block = res["models"]["model-a"][setting]
        got = api(served, run=1, setting=setting)
        for cond in ("presupposition", "nfp"):
            assert got["counts"]["condition"][cond] == block["overall"][cond]["units"]
        assert got["counts"]["outcome"]["unscored"] == block["overall"]["unscored"]["k"]
        assert got["counts"]["category"] == {k: v["n_items"] for k, v in block["by_category"].items()}
    body = api(served, run=1)
    # no reference condition: no flips; the units under caution read against the same units under none
    assert body["outcomes"] == ["unread", "truncated", "unscored", "error", "extracted", "paired_none", "better_than_none", "worse_than_none"]
    assert served["client"].get("/api/units", params={"run": 1, "outcome": "flip"}).status_code == 400
    # the pairs of PCR's paired test: the questions scored on both sides, each under caution
    pairs = api(served, run=1, condition="presupposition", outcome="paired_none")
    assert pairs["total"] and set(pairs["counts"]["setting"]) == {"caution"} and all(u["state"] == "valid" for u in pairs["units"])
    assert pairs["counts"]["outcome"]["paired_none"] == pairs["total"] >= pairs["counts"]["outcome"]["better_than_none"]


def test_filters_page_and_search(served):
    a = api(served, run=0, content_type="cue_remapping", provenance="neutral")
    assert a["total"] and all(u["facets"]["content_type"] == "cue_remapping" and u["facets"]["provenance"] == "neutral" for u in a["units"])
    # paging: pages of 50 in store order, together every unit once
    seen = []
    for page in range(1, api(served, run=0)["pages"] + 1):
        seen += [(u["model"], u["unit_id"]) for u in api(served, run=0, page=page)["units"]]
    assert len(seen) == len(set(seen)) == 384 and seen == sorted(seen)
    # search over replies and prompts: the misleading sentence only stressed prompts carry
    q = api(served, run=0, q="Misleading claim")
    assert q["total"] and q["counts"]["condition"].get("clean", 0) == 0
    assert api(served, run=0, q="no such text anywhere")["total"] == 0
    # a plain substring: LIKE's pattern characters are text, and ASCII case is ignored
    assert api(served, run=0, q="%")["total"] == api(served, run=0, q="_")["total"] == 0
    assert api(served, run=0, q="ANSWER: A")["total"] == api(served, run=0, q="answer: a")["total"] > 0
    # outcome given twice: both must hold
    both = api(served, run=0, outcome=["flip", "flip_to_target"])
    assert both["total"] == api(served, run=0, outcome="flip_to_target")["total"]


def test_several_conditions_and_flips_elsewhere(served):
    """condition=a,b (any of them) in the API, the page and its filter bar; flip_elsewhere counts
    the flips the results call elsewhere (not to the target, not unread, not cut)."""
    res = results(served, "misleading")["models"]["model-a"]["none"]["overall"]
    both = api(served, run=0, model="model-a", setting="none", condition="type1,type2", outcome="flip")
    assert both["total"] == res["type1"]["asr"]["k"] + res["type2"]["asr"]["k"] > 0
    assert set(both["counts"]["condition"]) == {"type1", "type2"}
    page = served["client"].get("/units", params={"run": 0, "condition": "type1,type2"})
    assert page.status_code == 200 and "condition type1 or type2" in page.text and 'value="type1,type2" selected' in page.text
    for cond in ("type1", "type2"):
        asr = res[cond]["asr"]
        to_target = res[cond]["tasr"]["k"] if cond == "type1" else 0
        got = api(served, run=0, model="model-a", setting="none", condition=cond, outcome="flip_elsewhere")
        assert got["total"] == asr["k"] - asr["invalid_flips"] - asr["truncated_flips"] - to_target, cond
        assert all(u["state"] == "valid" and "flip_to_target" not in u["outcomes"] for u in got["units"])
    assert "flip_elsewhere" not in api(served, run=2)["outcomes"]  # noise declares no target
    # (a reason's units against the report's tally: test_report_counts, whose judge leaves some unscored)
    assert api(served, run=1, reason="no such reason")["total"] == 0


def test_bad_filters_are_400_with_the_reason(served):
    c = served["client"]
    for params, word in (({"run": 9}, "run 9"), ({"run": 0, "outcome": "nope"}, "nope"), ({"run": 0, "colour": "red"}, "colour"), ({"page": "x"}, "whole")):
        r = c.get("/api/units", params=params)
        assert r.status_code == 400 and word in r.json()["error"]
        assert c.get("/units", params=params).status_code == 400
    assert c.get("/unit/0/no-such-unit").status_code == 404


def test_a_flip_side_by_side_with_its_clean_pair_and_the_injected_sentence_marked(served):
    c = served["client"]
    flip = api(served, run=0, model="model-a", setting="none", condition="type1", outcome="flip_to_target")["units"][0]
    ev = c.get(f"/api/unit/0/{quote(flip['unit_id'], safe='')}").json()
    assert {m["row"]["model"] for m in ev["models"]} == {"model-a", "model-b"}  # the same unit across models
    a = next(m for m in ev["models"] if m["row"]["model"] == "model-a")
    assert a["clean_row"]["condition"] == "clean" and a["clean_row"]["setting"] == "none"
    user = next(m for m in a["evidence"]["marked"] if m["role"] == "user")
    added = "".join(t for k, t in user["runs"] if k == "added")
    assert "Misleading claim" in added and "Question number" not in added  # only the stress is marked
    assert a["evidence"]["score"]["label"] == flip["facets"]["target"] and a["evidence"]["reading"]["read"].startswith("an answer")
    assert a["evidence"]["call"]["attempts"] == 1 and a["evidence"]["call"]["prompt_tokens"] > 0
    across = {(x["model"], x["setting"]): x for x in ev["across"]}
    assert set(across) == {(m, s) for m in ("model-a", "model-b") for s in ("none", "caution")}  # side by side
    assert all(x["condition"] == "type1" and x["probe_id"] == flip["probe_id"] and "Answer:" in x["reply"] for x in across.values())
    settings = {(s["setting"], s["condition"]) for s in ev["siblings"]}
    assert ("caution", "type1") in settings and ("none", "clean") in settings  # the item across settings
    html = c.get(f"/unit/0/{quote(flip['unit_id'], safe='')}").text
    assert '<ins class="added">' in html and "Misleading claim" in html


def test_a_judged_unit_shows_the_verdict_and_reason(served):
    c = served["client"]
    unit = api(served, run=1, condition="presupposition")["units"][0]
    ev = c.get(f"/api/unit/1/{quote(unit['unit_id'], safe='')}").json()
    e = ev["models"][0]["evidence"]
    assert e["judged"] and e["score"]["label"] in ("-1", "0", "1") and e["reading"]["reason"].startswith("as the rules say")
    # the judge's full reply, found by the judge call's key the verdict recorded
    assert json.loads(e["judge_reply"]) == {"reason": e["reading"]["reason"], "verdict": e["score"]["label"]}
    html = c.get(f"/unit/1/{quote(unit['unit_id'], safe='')}").text
    assert "Judge" in html and "verdict" in html and "The judge's full reply" in html


def test_hostile_text_is_escaped(served):
    c = served["client"]
    label = api(served, run=3, q="pwned")
    assert label["total"]
    hostile_label = [u for u in api(served, run=3, condition="type1", page=1)["units"] if u["label"] and "<script>" in u["label"]]
    pages = [c.get("/units", params={"run": 3, "condition": "type1"}).text, c.get("/units", params={"run": 1}).text]
    pages += [c.get(f"/unit/{r}/{quote(api(served, run=r)['units'][0]['unit_id'], safe='')}").text for r in (0, 1, 2)]
    assert hostile_label  # a label another tool wrote
    pages.append(c.get(f"/unit/3/{quote(hostile_label[0]['unit_id'], safe='')}").text)
    # tool results carrying hostile text (a passage's title and text), in an agent's trajectory
    agent_unit = agent_units(served)[0]["unit_id"]
    pages.append(c.get(f"/unit/{AGENT_RUN}/{quote(agent_unit, safe='')}").text)
    assert "Resuscitation &lt;script&gt;" in pages[-1]
    for html in pages:
        assert "<script" not in html and "<img" not in html  # shown as text: the browser test checks no handler runs
        assert "&lt;script&gt;" in html
    r = c.get("/units", params={"run": 0})
    assert "script-src" not in r.headers["content-security-policy"] and r.headers["x-frame-options"] == "DENY"


def test_nothing_is_written(served):
    c = served["client"]
    for method in ("post", "put", "delete", "patch"):
        assert getattr(c, method)("/units").status_code == 405
    api(served, run=0, q="x")
    assert {k: _digest(d / "store.sqlite") for k, d in served["dirs"].items()} == served["before"]
    for d in served["dirs"].values():
        assert not (d / "store.sqlite-wal").exists() or (d / "store.sqlite-wal").stat().st_size == 0
    # the viewer's connection cannot write the store even if asked to
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        served["runs"][0].store.conn.execute("DELETE FROM units")


def test_read_only_open_of_a_missing_store_names_it(tmp_path):
    from medresilience.store import StoreWriteError

    with pytest.raises(StoreWriteError, match="no such file"):
        Store.read_only(tmp_path / "nope.sqlite")
    res = CliRunner().invoke(cli_app, ["view", str(tmp_path)])
    assert res.exit_code == 2 and "not a run directory" in res.output


def test_export_writes_static_pages_with_a_cap(served, tmp_path):
    out = tmp_path / "site"
    res = export_site(served["runs"][:3], out, max_units=60)
    assert (out / MARKER).exists() and (out / "index.html").exists()
    assert res.capped and any("run 0" in c for c in res.capped)
    first = (out / "units-r0-all-p1.html").read_text()
    assert "Capped: each list stops at the page holding its 60th unit" in first and 'href="units-r0-all-p2.html"' in first and "/units?" not in first
    assert (out / "units-r0-flip-p1.html").exists() and (out / "units-r2-flip-p1.html").exists()
    # a unit's page for every unit an exported list shows: the first 100 of all (2 pages of 50), the flips
    shown = {u["unit_id"] for p in (1, 2) for u in api(served, run=0, page=p)["units"]}
    shown |= {u["unit_id"] for o in ("flip", "flip_to_target") for p in (1, 2) for u in api(served, run=0, outcome=o, page=p)["units"]}
    assert {p.name for p in out.glob("unit-r0-*.html")} == {unit_file(0, u) for u in shown}
    assert "<script" not in "".join(p.read_text() for p in out.glob("*.html"))
    # a second export replaces the first; another directory is refused
    export_site(served["runs"][:1], out, max_units=10)
    assert not (out / "units-r2-flip-p1.html").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    cli = CliRunner().invoke(cli_app, ["view", str(served["dirs"]["misleading"]), "--export", str(other)])
    assert cli.exit_code == 2 and "not an earlier viewer export" in cli.output and (other / "keep.txt").exists()
    cli = CliRunner().invoke(cli_app, ["view", str(served["dirs"]["misleading"]), "--export", str(tmp_path / "zero"), "--max-units", "0"])
    assert cli.exit_code == 2 and "--max-units" in cli.output and not (tmp_path / "zero").exists()
    cli = CliRunner().invoke(cli_app, ["view", str(served["dirs"]["misleading"]), "--export", str(tmp_path / "cli-site"), "--max-units", "20"])
    assert cli.exit_code == 0 and "capped" in cli.output and (tmp_path / "cli-site" / "index.html").exists()


def test_only_loopback_host_names_are_served(served):
    c = served["client"]
    assert c.get("/", headers={"host": "127.0.0.1:8766"}).status_code == 200
    assert c.get("/", headers={"host": "viewer.example.org"}).status_code == 400  # DNS rebinding
    import inspect

    from medresilience.cli.view import view

    assert inspect.signature(view).parameters["host"].default == "127.0.0.1"


def test_a_run_whose_suite_is_gone_is_served_without_facets(served, tmp_path):
    import shutil

    run = tmp_path / "noise-moved"
    shutil.copytree(served["dirs"]["noise"], run)
    config = json.loads((run / "run.json").read_text())
    config["suite"]["path"] = str(tmp_path / "nowhere")
    (run / "run.json").write_text(json.dumps(config))
    [rv] = open_runs([run])
    try:
        assert rv.facets == () and any("suite was not found" in n for n in rv.notes)
        assert rv.units == served["runs"][2].units and "flip" in rv.outcomes  # the family still pairs clean and stressed
        client = TestClient(create_app([rv]), base_url="http://127.0.0.1")
        body = client.get("/api/units", params={"outcome": "flip"}).json()
        assert body["total"] == api(served, run=2, outcome="flip")["total"]
        assert "suite was not found" in client.get("/units").text
    finally:
        rv.close()


def agent_units(served) -> list[dict]:
    return [u for u in api(served, run=AGENT_RUN)["units"] if u["setting"].startswith("agent:")]


def test_an_agent_units_whole_trajectory_in_order(served):
    c = served["client"]
    units = agent_units(served)
    assert len(units) == 3
    unit = next(u for u in units if u["condition"] == "clean")
    ev = c.get(f"/api/unit/{AGENT_RUN}/{quote(unit['unit_id'], safe='')}").json()["models"][0]["evidence"]
    tr = ev["trajectory"]
    steps = tr["steps"]
    assert [s["n"] for s in steps] == [1, 2, 3] and [s["role"] for s in steps] == ["agent.step1", "agent.step2", "agent.answer"]
    search, read, answer = steps
    assert search["tool_calls"] == [{"name": "search", "arguments": '{"query": "chest compression cardiac arrest"}'}]
    pid = search["tools"][0]["hits"][0]["id"]
    assert search["tools"][0]["tool"] == "search" and search["tools"][0]["arg"] == "chest compression cardiac arrest"
    assert [m["role"] for m in search["read_back"]] == ["tool"] and f"[{pid}] Resuscitation" in search["read_back"][0]["content"]
    assert read["tool_calls"] == [{"name": "read", "arguments": json.dumps({"id": pid})}] and "push hard and fast" in read["read_back"][0]["content"]
    assert answer["tool_calls"] == [] and answer["read_back"] == [] and f'SOURCE: {pid} "push hard and fast"' in answer["text"]
    assert all(s["status"] == "ok" and s["prompt_tokens"] > 0 for s in steps)
    assert tr["summary"]["outcome"] == "answered" and tr["summary"]["searches"] == ["chest compression cardiac arrest"] and tr["summary"]["reads"] == [pid]
    assert [(x["id"], x["exists"], x["contains"]) for x in tr["summary"]["cited"]] == [(pid, True, True), ("P999", False, False)]
    # the messages sent first are the opening; the steps' calls are shown in the trajectory, not as calls before the answer
    assert tr["opening"] < len(ev["messages"]) and all(m["role"] != "assistant" for m in ev["messages"][: ev["opening"]])
    assert ev["linked"] == [] and ev["call"]["text"] == "Answer: C"
    html = c.get(f"/unit/{AGENT_RUN}/{quote(unit['unit_id'], safe='')}").text
    marks = [
        "The agent's trajectory",
        "Step 1",
        "search({&#34;query&#34;: &#34;chest compression cardiac arrest&#34;})",
        "Step 2",
        "Step 3",
        "Citations",
        "Final answer",
    ]
    at = [html.find(m) for m in marks]
    assert -1 not in at and at == sorted(at), dict(zip(marks, at))
    # the unit under none has no trajectory
    plain = next(u for u in api(served, run=AGENT_RUN, setting="none")["units"])
    assert c.get(f"/api/unit/{AGENT_RUN}/{quote(plain['unit_id'], safe='')}").json()["models"][0]["evidence"]["trajectory"] is None


def test_a_second_turn_shows_both_turns_and_links_the_first(served):
    c = served["client"]
    unit = api(served, run=PRESSURE_RUN, condition="doubt")["units"][0]
    ev = c.get(f"/api/unit/{PRESSURE_RUN}/{quote(unit['unit_id'], safe='')}").json()["models"][0]["evidence"]
    t = ev["turns"]
    earlier = t["earlier"]
    assert earlier["condition"] == "clean" and earlier["item_id"] == unit["item_id"] and earlier["model"] == unit["model"]
    first = c.get(f"/api/unit/{PRESSURE_RUN}/{quote(earlier['unit_id'], safe='')}").json()["models"][0]["evidence"]
    assert first["turns"] is None  # the clean question stands alone
    assert t["turn1"]["reply"] == first["call"]["text"] and t["same_reply"] is True
    assert [m["content"] for m in t["turn1"]["messages"]] == [m["content"] for m in first["messages"]]
    assert [m["role"] for m in t["turn2"]["messages"]] == ["user"] and t["turn2"]["messages"][0]["content"].startswith("Are you sure?")
    assert t["turn2"]["reply"] == ev["call"]["text"]
    html = c.get(f"/unit/{PRESSURE_RUN}/{quote(unit['unit_id'], safe='')}").text
    marks = ["Turn 1: the question", "Turn 1: the reply", "Turn 2: the push-back", "Are you sure?", "Turn 2: the reply"]
    at = [html.find(m) for m in marks]
    assert -1 not in at and at == sorted(at), dict(zip(marks, at))
    assert f'href="/unit/{PRESSURE_RUN}/{quote(earlier["unit_id"], safe="")}"' in html[at[0] : at[1]]  # the turn-1 unit, linked
    stressed = html.split('<section class="card stressed">')[1].split("</section>\n</div>")[0]
    assert "Turn 1: the question" in stressed and "Messages sent" not in stressed  # the turns replace the flat list


def test_an_agent_out_of_steps_shows_every_step_in_number_order(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "p-cpr", "title": "Resuscitation", "text": CPR}) + "\n", encoding="utf-8")
    build_index(tmp_path / "corpus.jsonl", tmp_path / "corpus.sqlite")
    with StubServer(policy=scripted_agent([("search", "cardiac arrest")])) as srv:  # never answers
        evaluate(
            sample_suite(),
            [parse_model_spec(f"openai:stub-model,base_url={srv.base_url}")],
            tmp_path / "run",
            EvalOptions(settings=(f"agent:{tmp_path / 'corpus.sqlite'},steps=11",), limit=1),
        )
    [rv] = open_runs([tmp_path / "run"])
    try:
        client = TestClient(create_app([rv]), base_url="http://127.0.0.1")
        unit = client.get("/api/units").json()["units"][0]
        ev = client.get(f"/api/unit/0/{quote(unit['unit_id'], safe='')}").json()["models"][0]["evidence"]
        steps = ev["trajectory"]["steps"]
        # step 10 after step 9 (not after step 1, as the roles sort by name)
        assert [s["n"] for s in steps] == list(range(1, 12)) and steps[-1]["role"] == "agent.answer"
        assert all(s["tool_calls"][0]["name"] == "search" for s in steps) and all(s["read_back"] for s in steps[:-1])
        assert steps[-1]["read_back"] == [] and ev["trajectory"]["summary"]["outcome"] == "out_of_steps"
        html = client.get(f"/unit/0/{quote(unit['unit_id'], safe='')}").text
        assert "Not carried out: the trajectory ended here (out of steps)" in html and html.find("Step 9") < html.find("Step 10") < html.find("Step 11")
    finally:
        rv.close()


def test_pressure_report_cells_link_to_the_units_they_count(served, tmp_path):
    """The pressure section's flip, flip-to-pushed and recovery rates link to the viewer's outcomes of
    a second turn against its first answer; each link's units are the rate's k; turn-2 accuracy links
    to every answered unit of the condition (its n)."""
    import html as html_mod
    import re
    from urllib.parse import parse_qsl, urlsplit

    from medresilience.report import build_report

    rep = build_report([served["dirs"][k] for k in ORDER], tmp_path / "report")
    page = rep.html.read_text(encoding="utf-8")
    links = [dict(parse_qsl(urlsplit(html_mod.unescape(u)).query)) for u in re.findall(r'<a class="units" href="([^"]+)"', page)]
    block = results(served, "pressure")["models"]["m"]["none"]["by_condition"]
    # the section's rates (the reading table's counts link to the run's units under no condition)
    mine = [q for q in links if q.get("run") == str(PRESSURE_RUN) and q.get("condition") in block]
    want = {"flip": "flip", "flip_to_target": "flip_to_pushed", "recovered": "recovery"}
    seen = set()
    for q in mine:
        if q.get("outcome") == "paired":  # the pairs column: second turns answered after an answered first
            assert api(served, **q)["total"] == block[q["condition"]]["pairs"]
            continue
        rate = want.get(q.get("outcome"), "turn2_acc")
        stats = block[q["condition"]][rate]
        got = api(served, **q)["total"]
        assert got == (stats["k"] if "outcome" in q else stats["n"]), (q, stats)
        seen.add((q["condition"], rate))
    # every rate the run measured (a number, not a dash) links to its units
    measured = {
        (cond, rate) for cond, b in block.items() for rate in ("flip", "flip_to_pushed", "recovery", "turn2_acc") if (b.get(rate) or {}).get("p") is not None
    }
    assert measured and seen == measured
