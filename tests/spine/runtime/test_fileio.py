"""The one file module: rows of JSON, CSV and Parquet files with their lines, and the Parquet
writer, on real files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import one_error_line
from medresilience.cli import app
from medresilience.runtime.errors import InputError, MedresError
from medresilience.runtime.fileio import iter_json_lines, iter_parquet_rows, iter_rows, table_rows, write_parquet_table
from medresilience.suite import Suite


def test_parquet_written_atomically_and_read_back_by_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    target = tmp_path / "out" / "rows.parquet"
    write_parquet_table(target, pa.table({"id": ["a", "b"], "n": [1, 2]}))
    assert list(iter_parquet_rows(target)) == [(1, {"id": "a", "n": 1}), (2, {"id": "b", "n": 2})]
    assert [p.name for p in target.parent.iterdir()] == ["rows.parquet"]  # no temporary file left
    with pytest.raises((AttributeError, TypeError)):  # not a pyarrow Table
        write_parquet_table(tmp_path / "out" / "bad.parquet", "not a table")
    assert [p.name for p in target.parent.iterdir()] == ["rows.parquet"]  # nothing half-written


def test_rows_of_every_layout_carry_their_lines(tmp_path):
    array = tmp_path / "rows.json"
    array.write_text('[\n  {"id": 1},\n  {"id": 2}\n]\n')
    assert list(iter_rows(array)) == [(2, {"id": 1}), (3, {"id": 2})]
    stream = tmp_path / "stream.json"
    stream.write_text('{\n  "id": 1\n}\n{\n  "id": 2\n}\n')
    assert list(iter_rows(stream)) == [(1, {"id": 1}), (4, {"id": 2})]
    lines = tmp_path / "rows.jsonl"
    lines.write_text('{"id": 1}\n\n{"id": 2}\n')
    assert list(iter_rows(lines)) == [(1, {"id": 1}), (3, {"id": 2})]
    not_object = tmp_path / "list.json"
    not_object.write_text("[\n  [1, 2]\n]\n")
    with pytest.raises(InputError, match=r"list.json:2: expected a JSON object"):
        list(iter_rows(not_object))
    # the JSON-lines path refuses a row that is not an object on its own line, as the array path does
    not_object_line = tmp_path / "rows2.jsonl"
    not_object_line.write_text('{"id": 1}\n[1, 2]\n{"id": 3}\n')
    with pytest.raises(InputError, match=r"rows2.jsonl:2: expected a JSON object, got \[1, 2\]"):
        list(iter_rows(not_object_line))


def test_csv_rows_name_the_line_of_a_bad_row(tmp_path):
    f = tmp_path / "labels.csv"
    f.write_text("unit_id,label\nu1,1\n\nu2,0,extra\n")
    kind, header, rows = table_rows(f)
    assert (kind, header) == ("csv", ["unit_id", "label"])
    assert next(rows) == (2, {"unit_id": "u1", "label": "1"})
    with pytest.raises(InputError, match=r"labels.csv:4: has 3 cells, the header has 2"):
        next(rows)
    tsv = tmp_path / "labels.tsv"
    tsv.write_text("unit_id\tlabel\nu1\t1\n")
    assert list(table_rows(tsv)[2]) == [(2, {"unit_id": "u1", "label": "1"})]


def test_json_values_streamed_in_small_chunks_read_as_the_whole_text(tmp_path):
    from medresilience.runtime.fileio import json_values

    f = tmp_path / "values.json"
    text = '{"a": 1}\n[\n  {"b": "x"},\n  12345,\n  [1, 2]\n]\n67890\n{"c":\n  {"d": null}}\n[]\n'
    f.write_text(text)
    whole = list(json_values(f, text))
    assert whole == [(1, {"a": 1}), (3, {"b": "x"}), (4, 12345), (5, [1, 2]), (7, 67890), (8, {"c": {"d": None}})]
    for chunk in (1, 3, 7, 1000):  # a piece ends inside values, numbers and whitespace alike
        assert list(json_values(f, chunk=chunk)) == whole
    bad = tmp_path / "bad.json"
    bad.write_text('[\n  {"a": 1},\n  {"a": 2,, "b": 3}\n]\n')
    for kwargs in ({"text": bad.read_text()}, {"chunk": 2}):
        with pytest.raises(InputError, match=r"bad.json:3: not valid JSON \(Expecting property name enclosed in double quotes at column 11\)"):
            list(json_values(bad, **kwargs))
    unclosed = tmp_path / "unclosed.json"
    unclosed.write_text('[\n  {"a": 1}\n  {"a": 2}\n]\n')
    with pytest.raises(InputError, match=r"unclosed.json:3: not valid JSON \(expected ',' or '\]' after an array element\)"):
        list(json_values(unclosed, chunk=4))
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": 1}\n{"a": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"latin.json:2: not UTF-8 text"):
        list(json_values(latin, chunk=2))


def test_csv_records_name_the_exact_line_of_a_bad_byte(tmp_path):
    from medresilience.runtime.fileio import csv_records
    from medresilience.sources.mmlu import read_mmlu

    f = tmp_path / "anatomy_test.csv"
    good = "".join(f"Question {i}?,a,b,c,d,A\n" for i in range(300))
    f.write_bytes(b"\xef\xbb\xbf" + b'"A question\nover two lines?",a,b,c,d,B\n\n' + good.encode() + b"Caf\xe9?,a,b,c,d,A\n")
    records = csv_records(f)
    assert next(records) == (1, ["A question\nover two lines?", "a", "b", "c", "d", "B"])  # the byte-order mark dropped
    assert next(records) == (4, ["Question 0?", "a", "b", "c", "d", "A"])  # a blank line skipped
    with pytest.raises(InputError, match=r"anatomy_test.csv:304: not UTF-8 text"):
        list(records)
    with pytest.raises(InputError, match=r"anatomy_test.csv:304: not UTF-8 text"):
        list(read_mmlu(f))


runner = CliRunner()


MEDQA_ROW = {"question": "Which is right?", "options": {"A": "a", "B": "b", "C": "c", "D": "d"}, "answer": "a", "answer_idx": "A"}


def _medqa_lines(n: int) -> list[str]:
    return [json.dumps({**MEDQA_ROW, "question": f"Question {i}: " + "padding " * 20 + "which is right?"}) for i in range(1, n + 1)]


def test_a_utf8_bom_is_accepted_everywhere(tmp_path):
    from medresilience.sources import detect_format, load_items

    src = tmp_path / "medqa.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + "\n".join(_medqa_lines(3)).encode() + b"\n")
    assert detect_format(src) == "medqa"
    assert len(list(load_items(src))) == 3
    assert [n for n, _ in iter_json_lines(src)] == [1, 2, 3]
    r = runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "items.jsonl")])
    assert r.exit_code == 0, r.output


def test_a_non_utf8_byte_is_reported_on_its_line(tmp_path):
    from medresilience.runtime.fileio import json_lines
    from medresilience.sources import load_items
    from medresilience.sources.detect import detect_format

    lines = [s.encode() for s in _medqa_lines(200)]
    lines[149] = lines[149].replace(b"which", b"wh\xffich")
    src = tmp_path / "medqa.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    for read in (lambda: list(iter_json_lines(src)), lambda: list(json_lines(src)), lambda: list(load_items(src))):
        with pytest.raises(InputError) as ei:
            read()
        assert ei.value.line == 150 and "UTF-8" in str(ei.value)
    line = one_error_line(runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "items.jsonl")]))
    assert "medqa.jsonl:150" in line
    first = tmp_path / "first.jsonl"
    first.write_bytes(lines[149] + b"\n")
    with pytest.raises(InputError) as ei:
        detect_format(first)
    assert ei.value.line == 1


def test_an_oversized_field_is_refused_naming_file_line_and_field(tmp_path, tiny_suite, monkeypatch):
    from medresilience.sources import load_items

    rows = _medqa_lines(3)
    rows[1] = json.dumps({**MEDQA_ROW, "question": "x" * 150_000})
    src = tmp_path / "medqa.jsonl"
    src.write_text("\n".join(rows) + "\n")
    line = one_error_line(runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "items.jsonl")]))
    assert "medqa.jsonl:2" in line and "question" in line and "100,000" in line and "MEDRES_MAX_FIELD_CHARS" in line
    monkeypatch.setenv("MEDRES_MAX_FIELD_CHARS", "200000")
    assert len(list(load_items(src))) == 3
    monkeypatch.setenv("MEDRES_MAX_FIELD_CHARS", "2000")
    # a suite's probe (a nested field)
    d = tmp_path / "s"
    tiny_suite.save(d)
    probes = (d / "probes.jsonl").read_text().splitlines()
    obj = json.loads(probes[4])
    obj["context"][0]["text"] = "y" * 3000
    probes[4] = json.dumps(obj)
    (d / "probes.jsonl").write_text("\n".join(probes) + "\n")
    with pytest.raises(InputError) as ei:
        Suite.load(d, verify=False)
    assert ei.value.line == 5 and ei.value.field == "context.0.text" and "3,000" in str(ei.value)
    # an MMLU row (CSV: the record check, and the text-field check of the JSON-lines readers)
    csv_src = tmp_path / "anatomy_test.csv"
    csv_src.write_text('q1?,a,b,c,d,A\n"' + "z" * 2500 + '",a,b,c,d,B\n')
    with pytest.raises(InputError) as ei:
        list(load_items(csv_src))
    assert ei.value.line == 2 and ei.value.field == "question"
    mcqa = tmp_path / "mcqa.jsonl"
    mcqa.write_text(json.dumps({"question": "q?", "opa": "w" * 2500, "opb": "b", "opc": "c", "opd": "d", "cop": 1, "id": "x"}) + "\n")
    with pytest.raises(InputError) as ei:
        list(load_items(mcqa))
    assert ei.value.line == 1 and ei.value.field == "opa"
    for bad in ("lots", "0", "100"):  # not a number; below the least limit (1,024)
        monkeypatch.setenv("MEDRES_MAX_FIELD_CHARS", bad)
        with pytest.raises(MedresError, match="MEDRES_MAX_FIELD_CHARS"):
            list(load_items(src))


def test_the_csv_rule_quotes_formulas_leaves_numbers_and_undoes_exactly():
    from medresilience.runtime.fileio import csv_cell, csv_text

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
    assert {d.split(":")[0] for d in direct} == {"runtime/fileio.py"}, direct
    assert len(direct) == 2  # csv.writer in write_csv, to_csv in write_csv_frame
    # the writers of the toolkit's CSV files, each through the rule
    assert {"review/exchange.py", "review/stats.py", "review/picks.py", "review/parts.py", "review/harm.py", "report/tables.py"} <= through
