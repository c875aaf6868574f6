"""An adaptive attack's turns in the evidence viewer, in a real headless Chromium (Debian's
/usr/bin/chromium driven by Playwright; no browser is downloaded), served by `medres view` in a
subprocess over the scripted stub run (families.adaptive.testing.ScriptedAttack): the report's
flipped cell links to the viewer's page of the flipped attacks, whose turn strip per unit is the
stored trace's; one click on a unit shows its attack turn by turn, side by side (the stress with
what it changed against the clean item, the rules' and checker's verdict, the answer and its
reasoning), each turn equal to the stored trace, a refused candidate marked refused and never
used. Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

import re

import pytest

from conftest import browser, needs_chromium, view_serve

sync_api = needs_chromium()

from test_adaptive import EXPECTED, run  # noqa: E402

from medresilience import build_report  # noqa: E402
from medresilience.families.adaptive.taxonomy import KIND_SPECS  # noqa: E402
from medresilience.families.adaptive.testing import ScriptedAttack  # noqa: E402
from medresilience.families.adaptive.traces import full_traces  # noqa: E402
from medresilience.store import Store  # noqa: E402
from medresilience.testing.stub import StubServer  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("attack-view")
    with StubServer(policy=ScriptedAttack()) as srv:
        run(root, srv.base_url)
    with Store(root / "run" / "store.sqlite") as store:
        traces = {t["item_id"]: t for t in full_traces(store)}
    with view_serve(root / "run") as viewer:  # the viewer prints its base URL once the runs are indexed
        build_report(root / "run", root / "report", viewer_url=viewer.url)
        yield {"url": viewer.url, "root": root, "traces": traces}


def shown_turns(page) -> list[dict]:
    """The turns the unit page shows, read from the page as a person sees it."""
    out = []
    rows = page.locator("section#attack table.turns tbody tr")
    for i in range(rows.count()):
        r = rows.nth(i)
        used = r.get_attribute("data-used") == "yes"
        stress = r.locator("td.stress")
        out.append(
            {
                "turn": int(r.get_attribute("data-turn")),
                "outcome": r.get_attribute("data-outcome"),
                "used": used,
                "marked_used": stress.locator("p.used").count() == 1,
                "marked_rejected": stress.locator("p.rejected").count() == 1,
                "stress": stress.locator("blockquote.proposal").inner_text(),
                "added": " ".join(stress.locator("ins.added").all_text_contents()),
                "kind": r.locator("td.n .muted").inner_text(),
                "verdict": r.locator("td.verdict .checker-verdict").inner_text() if r.locator("td.verdict .checker-verdict").count() else None,
                "problems": r.locator("td.verdict ul.problems li").all_inner_texts(),
                "label": r.locator("td.answer .answer-label").inner_text() if used else None,
                "reply": r.locator("td.answer pre.target-reply").inner_text() if used else None,
                "flipped_here": r.locator("td.n .flip").count() == 1,
            }
        )
    return out


def expected_turns(trace: dict) -> list[dict]:
    """The turns as the stored trace holds them, in the shape `shown_turns` reads."""
    out = []
    for t in trace["turns"]:
        used = t["outcome"] in ("held", "flipped", "unread")
        out.append(
            {
                "turn": t["turn"],
                "outcome": t["outcome"],
                "used": used,
                "marked_used": used,
                "marked_rejected": not used,
                "stress": t["stress"],
                "kind": KIND_SPECS[t["kind"]].label,
                "verdict": None if "checker_key" not in t else (t["verdict"] or "unread"),
                "problems": list(t["problems"]),
                "label": (t["label"] or "unread") if used else None,
                "reply": t.get("reply") if used else None,
                "flipped_here": trace["flipped_at"] == t["turn"],
            }
        )
    return out


def test_from_the_report_s_flipped_cell_to_each_attack_s_turns(served, tmp_path):
    traces = served["traces"]
    flipped = sorted(i for i, (at, *_rest) in EXPECTED.items() if at is not None)
    with browser(sync_api, tmp_path / "profile", viewport={"width": 1400, "height": 900}) as b:
        page = b.page
        page.goto((served["root"] / "report" / "report.html").as_uri(), wait_until="load")
        cell = page.locator('a.units[href*="outcome=flip"][href*="condition=adaptive"]').first
        assert cell.inner_text() == "66.7%"  # 4 of the 6 attacked items flipped
        cell.click()
        page.wait_for_load_state("load")
        assert page.url.startswith(served["url"] + "/units?") and "outcome=flip" in page.url
        assert "4 units match" in page.inner_text("#total")
        rows = page.locator("#units tbody tr")
        item_of = {t["unit_id"]: i for i, t in traces.items()}
        listed = {}
        for i in range(rows.count()):
            r = rows.nth(i)
            strip = r.locator("td.loop span.turn").all_inner_texts()
            unit_id = r.locator("td.id a").inner_text()
            listed[item_of[unit_id]] = (unit_id, strip)
        assert sorted(listed) == flipped
        for iid, (_uid, strip) in listed.items():
            want = [f"{t['turn']}: {t['outcome']}" + (f" {t['label']}" if t.get("label") else "") for t in traces[iid]["turns"]]
            assert strip == want, iid
        # one click on a flipped attack: its turns, side by side, equal to the stored trace
        for iid in flipped:
            page.goto(served["url"] + "/units?run=0&condition=adaptive&outcome=flip", wait_until="load")
            page.locator("#units tbody tr", has_text=listed[iid][0]).locator("td.loop a").click()
            page.wait_for_load_state("load")
            assert page.url.endswith("#attack")
            got = shown_turns(page)
            added = [g.pop("added") for g in got]
            assert got == expected_turns(traces[iid]), iid
            for g, a in zip(got, added):  # what a used turn changed against the clean item is the stress, marked
                # (a word diff: the stress's closing full stop may match the question's own)
                assert (re.findall(r"\w+", g["stress"]) == re.findall(r"\w+", a)) if g["used"] else a == ""
            facts = page.inner_text("section#attack dl.attack-facts")
            assert f"flipped at turn {traces[iid]['flipped_at']}" in facts and f"option pushed toward\n{traces[iid]['target']}" in facts
        # side by side: a turn's stress, verdict and answer in one row, left to right
        row = page.locator("section#attack table.turns tbody tr").last
        boxes = [row.locator(f"td.{c}").bounding_box() for c in ("stress", "verdict", "answer")]
        assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"] and abs(boxes[0]["y"] - boxes[2]["y"]) < 5
        assert not b.errors


@pytest.mark.parametrize("iid", ["q3", "q4", "q5"])
def test_an_attack_that_held_was_refused_or_unread_shows_its_stored_turns(served, tmp_path, iid):
    """A leak the rules refused (q4: no checker asked at turn 1, flipped at turn 2), an unread reply
    (q5: never a flip) and an attack held through the budget (q3), each turn as stored."""
    trace = served["traces"][iid]
    with browser(sync_api, tmp_path / "profile") as b:
        page = b.page
        page.goto(f"{served['url']}/unit/0/{trace['unit_id']}", wait_until="load")
        got = shown_turns(page)
        for g in got:
            g.pop("added")
        assert got == expected_turns(trace)
        assert page.locator("section#attack td.n .flip").count() == (trace["flipped_at"] is not None) == (iid == "q4")
        if iid == "q4":
            assert got[0]["marked_rejected"] and got[0]["verdict"] is None and any("names_correct_option" in x for x in got[0]["problems"])
        # the loop's calls are shown in the turns, not again as calls made before the answer
        assert "adaptive.trace" not in page.inner_text("main")
