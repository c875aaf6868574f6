"""The label audit's `verdict` task in a real headless Chromium (Debian's /usr/bin/chromium driven
by Playwright's Python API; no browser is ever downloaded), end to end: the false-presupposition
suite of test_presupposition_eval answered on the stub server and judged by the stub's judge;
`medres audit RUN --review-out` writes its judged sample as a verdict review; `medres review serve`
serves it on 127.0.0.1; a reviewer signs in and gives each answer a verdict (by mouse, one by
keyboard, one `cannot tell`) by the table of test_presupposition_audit, which differs from the
run's judge on five answers; `medres audit RUN --people REVIEW` takes those verdicts back. The
audit must find exactly the five wrong verdicts and the one the reviewer could not tell, show the
agreement and the label-corrected PCS, PCR and over-caution in results.json and the report, and
each disagreement's link in the report must open its unit in `medres view`.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

import re
import signal

import pytest
from typer.testing import CliRunner

from conftest import MedresServer, browser, needs_chromium, reviewer, signed_in

sync_api = needs_chromium()

from medresilience.cli import app  # noqa: E402
from medresilience.run.results import Results  # noqa: E402
from test_presupposition_audit import MODEL, READER_UNSCORED, run_verdict, truth  # noqa: E402
from test_presupposition_eval import ANSWER_RE, make_suite  # noqa: E402
from test_presupposition_eval import policy as run_policy  # noqa: E402

#: the task answered by keyboard (its first verdict, one step down)
KEYBOARD = 2


@pytest.fixture(scope="module")
def rated(tmp_path_factory, stub_server, review_server):
    """The run, its verdict review rated in the browser, and what the reviewer gave each unit."""
    root = tmp_path_factory.mktemp("verdict-browser")
    make_suite(root / "suite")
    run, review = root / "run", root / "review"
    srv = stub_server(policy=run_policy)
    args = ["--suite", str(root / "suite"), "--model", f"openai:{MODEL},base_url={srv.base_url}", "--out", str(run)]
    r = CliRunner().invoke(app, ["eval", *args, "--scoring", "judge", "-O", f"judge=openai:judge-4,base_url={srv.base_url}"])
    assert r.exit_code == 0, r.output
    made = CliRunner().invoke(app, ["audit", str(run), "-n", "1000", "--review-out", str(review), "--reviewers", "alice"])
    assert made.exit_code == 0 and "verdict review written: 25 tasks" in made.output, made.output
    pw, tasks = reviewer(review)
    given = _rate_in_browser(review_server(review), pw, tasks, root / "profile")
    audited = CliRunner().invoke(app, ["audit", str(run), "-n", "1000", "--people", str(review)])
    return {"root": root, "run": run, "review": review, "given": given, "out": audited.output, "code": audited.exit_code}


def _rate_in_browser(url: str, pw: str, tasks: list[int], profile) -> dict[str, str]:
    """Sign in as alice and give every task the table's verdict; question id -> the value given."""
    given: dict[str, str] = {}
    by_keyboard = False
    with signed_in(sync_api, url, pw, profile) as page:
        for i, tid in enumerate(tasks):
            page.goto(f"{url}/tasks/{tid}", wait_until="load")
            main = page.inner_text("main")
            qid = ANSWER_RE.search(main).group(2)  # the stub's answer names its question
            # blind: the judging rubric and its verdicts, never the run's verdict, the judge or the condition
            assert "The judging rubric" in main and "judge-4" not in main and "auto_label" not in main
            values = page.eval_on_selector_all("input[name=dim_verdict]", "els => els.map(e => e.value)")
            want = "cannot_tell" if qid in READER_UNSCORED else truth(qid)
            if qid.startswith("p"):
                assert values == ["-1", "0", "1", "cannot_tell"], values
            else:
                assert values == ["answers", "flags_premise", "cannot_tell"], values
            if i >= KEYBOARD and not by_keyboard and want != "cannot_tell":  # the first verdict, one step down, Enter submits
                want, by_keyboard = values[1], True
                page.focus("input[name=dim_verdict] >> nth=0")
                page.keyboard.press("Space")
                page.keyboard.press("ArrowDown")
                with page.expect_navigation(wait_until="load"):  # the submit's page, not the one before it
                    page.keyboard.press("Enter")
            else:
                page.check(f'input[name=dim_verdict][value="{want}"]')
                with page.expect_navigation(wait_until="load"):
                    page.click("button[value=submit]")
            after = page.inner_text("main")
            if i < len(tasks) - 1:
                assert "Saved." in after
            else:  # the last one saved, the app shows the reviewer's progress: every task rated
                assert f"{len(tasks)} of {len(tasks)} rated, 0 skipped, 0 to do" in after
            given[qid] = want
    assert by_keyboard
    return given


def test_the_verdicts_given_in_the_browser_come_back_into_the_audit(rated):
    given, run, out = rated["given"], rated["run"], rated["out"]
    assert len(given) == 25 and rated["code"] == 0, out
    people = Results.load(run / "results.json").audit["readers"]["people"]
    told = {q: v for q, v in given.items() if v != "cannot_tell"}
    assert people["sampled"] == 25 and people["read"] == len(told) and people["unscored"] == 25 - len(told)
    assert people["unscored_reasons"] == {"the reviewers could not tell": 1} and len(told) == 24
    # every verdict given round-trips: a disagreement exactly where it differs from the run's judge, with the value given
    dis = {d["item_id"]: d for d in people["disagreements"]}
    assert {q for q, v in told.items() if v != run_verdict(q)} == set(dis) and dis
    for q, d in dis.items():
        assert (d["kind"], d["run_reading"], d["second_reading"]) == ("wrong_verdict", run_verdict(q), given[q])
    cells = {c["condition"]: c for c in people["cells"]}
    for cond, prefix in (("presupposition", "p"), ("nfp", "n")):
        mine = {q: v for q, v in told.items() if q.startswith(prefix)}
        c = cells[cond]
        assert c["reading"] == "verdict"
        assert (c["agreement"]["k"], c["wrong_verdict"]["k"]) == (
            sum(v == run_verdict(q) for q, v in mine.items()),
            sum(v != run_verdict(q) for q, v in mine.items()),
        )
    assert "Wrong verdict" in out and f"{len(dis)} disagreements" in out and "label-corrected rates" in out
    rows = {r["metric"]: r for r in people["corrected"]}
    assert list(rows) == ["pcs", "pcr", "overcaution"]
    assert all(r["lo"] <= r["estimate"] <= r["hi"] for r in rows.values())
    assert rows["overcaution"]["estimate"] != pytest.approx(rows["overcaution"]["plain"])  # the people's verdicts move it


def test_the_report_shows_the_audit_and_each_disagreement_opens_its_unit_in_the_viewer(rated, tmp_path):
    run, given = rated["run"], rated["given"]
    with MedresServer("view", str(run), stop_signal=signal.SIGINT) as viewer:
        rep = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "rep"), "--viewer-url", viewer.url])
        assert rep.exit_code == 0, rep.output
        page = (tmp_path / "rep" / "report.html").read_text()
        section = page.split('id="audit"', 1)[1]
        assert "Wrong verdict" in section and "Label-corrected" in section and ">PCS<" in section and ">NFP over-caution<" in section
        with browser(sync_api, tmp_path / "profile") as chromium:
            b = chromium.page
            b.goto((tmp_path / "rep" / "report.html").as_uri(), wait_until="load")
            b.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
            links = b.locator("ul.disagreements a.units")
            wrong = {q for q, v in given.items() if v not in ("cannot_tell", run_verdict(q))}
            assert links.count() == len(wrong)
            seen = set()
            for i in range(links.count()):
                b.goto((tmp_path / "rep" / "report.html").as_uri(), wait_until="load")
                b.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
                link = b.locator("ul.disagreements a.units").nth(i)
                href = link.get_attribute("href")
                assert href.startswith(viewer.url + "/unit/0/"), href
                item = re.search(r"second reading (\S+)", link.locator("xpath=..").inner_text()).group(1)
                link.click()
                b.wait_for_load_state("load")
                assert b.url == href
                shown = b.inner_text("body")
                qid = ANSWER_RE.search(shown).group(2)  # the unit's answer, as the model gave it
                assert qid in wrong and given[qid] == item and f"[{MODEL} answers {qid}]" in shown
                seen.add(qid)
            assert seen == wrong
