"""The one file module: rows of JSON, CSV and Parquet files with their lines, and the Parquet
writer, on real files."""

from __future__ import annotations

import pytest

from medresilience.errors import InputError
from medresilience.fileio import iter_parquet_rows, iter_rows, table_rows, write_parquet_table


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
    from medresilience.fileio import json_values

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
    from medresilience.fileio import csv_records
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
