"""A lazily loaded suite read from disk as it goes (suite_index): checked once with every check of
`Suite.load`, then read back by offset a batch of items at a time, giving the same records in the
same order as the suite held in memory, whatever the order of the probe lines."""

from __future__ import annotations

import json
import random

import pytest

from conftest import make_tiny_suite
from medresilience.runtime.errors import InputError
from medresilience.runtime.fileio import sha256_file
from medresilience.suite import Suite


def _shuffled_suite(tmp_path, seed: int = 5):
    """The tiny suite (3 copies) saved with its probe lines in a seeded random order (probes of
    one item scattered through the file) and a byte-order mark before the first item."""
    s = make_tiny_suite(n_copies=3)
    probes = list(s.probes)
    random.Random(seed).shuffle(probes)
    d = Suite(s.manifest, list(s.items.values()), probes).save(tmp_path / "suite")
    raw = (d / "items.jsonl").read_bytes()
    (d / "items.jsonl").write_bytes(b"\xef\xbb\xbf" + raw)
    manifest = json.loads((d / "suite.json").read_text(encoding="utf-8"))
    manifest["checksums"]["items.jsonl"] = sha256_file(d / "items.jsonl")
    (d / "suite.json").write_text(json.dumps(manifest), encoding="utf-8")
    return d


def test_batches_read_back_the_records_of_the_suite_in_memory(tmp_path):
    d = _shuffled_suite(tmp_path)
    whole = Suite.load(d)
    lazy = Suite.load(d, lazy=True)
    assert lazy.item_ids() == list(whole.items)
    order = list(reversed(lazy.item_ids()))
    batches = list(lazy.batches(order, 7))
    assert lazy._unread is not None  # nothing was read whole
    assert len(batches) > 3 and all(len(b.items) >= 1 for b in batches)
    assert [i for b in batches for i in b.items] == order
    for b in batches:  # each item's probes, in file order, and nothing else
        assert b.probes == [p for i in b.items for p in whole.probes if p.item_id == i]
        last = list(b.items)[-1]
        assert len(b.items) + len(b.probes) - 1 - len(b.probes_for(last)) < 7  # cut after the item that filled it
    assert list(lazy.iter_items()) == list(whole.items.values())
    assert list(lazy.iter_probes()) == whole.probes
    assert lazy.records_of(order[:4]) == 4 + sum(len(whole.probes_for(i)) for i in order[:4])
    in_memory = list(whole.batches(order, 7))
    assert [(list(b.items.values()), b.probes) for b in in_memory] == [(list(b.items.values()), b.probes) for b in batches]


@pytest.mark.parametrize(
    ("line", "change", "field", "message"),
    [
        (4, {"item_id": "nope"}, "item_id", "no item 'nope'"),
        (6, {"target": "Z"}, None, ""),
        (9, "dup", "id", "duplicate probe id"),
    ],
)
def test_check_names_the_file_and_line_of_a_bad_probe_and_keeps_no_record(tmp_path, line, change, field, message):
    d = _shuffled_suite(tmp_path)
    path = d / "probes.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    if change == "dup":
        lines[line - 1] = lines[0]
    else:
        lines[line - 1] = json.dumps({**json.loads(lines[line - 1]), **change})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    lazy = Suite.load(d, verify=False, lazy=True)
    with pytest.raises(InputError) as e:
        lazy.check()
    assert e.value.path == str(path) and e.value.line == line
    if field:
        assert e.value.field == field
    assert message in str(e.value)
    with pytest.raises(InputError) as whole:  # the same error as reading it whole
        Suite.load(d, verify=False)
    assert str(whole.value) == str(e.value)


def test_check_of_a_bad_item_line_and_a_missing_probes_file(tmp_path):
    d = _shuffled_suite(tmp_path)
    lines = (d / "items.jsonl").read_bytes().splitlines()
    lines[2] = b"{not json"
    (d / "items.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(InputError, match=r"items\.jsonl:3.*not valid JSON"):
        Suite.load(d, verify=False, lazy=True).check()
    d2 = make_tiny_suite().save(tmp_path / "other")
    (d2 / "probes.jsonl").unlink()
    with pytest.raises(InputError, match=r"probes\.jsonl.*missing"):
        Suite.load(d2, verify=False, lazy=True).check()
