"""Records and suites: validation with file/line/field, atomic writes, checksums, seeded probes."""

from __future__ import annotations

import json

import pytest

from medresilience.families.misleading.bundles import bundle_of, probes_from_bundle
from medresilience.records import Item
from medresilience.runtime.errors import InputError
from medresilience.runtime.fileio import read_jsonl
from medresilience.suite import Suite


def _item(**kw):
    base = dict(id="x", source="t", question="q?", options={"A": "a", "B": "b", "C": "c"}, answer="B")
    return Item(**(base | kw))


def test_item_validation():
    with pytest.raises(ValueError, match="not one of the option letters"):
        _item(answer="D")
    with pytest.raises(ValueError, match="at least two options"):
        _item(options={"A": "a"}, answer="A")
    with pytest.raises(ValueError, match="in order"):
        _item(options={"A": "a", "C": "c"}, answer="A")
    assert _item().wrong_options == ["A", "C"]


def test_read_jsonl_names_line_and_field(tmp_path):
    p = tmp_path / "items.jsonl"
    good = _item().model_dump()
    bad = dict(good, id="y", options={"A": "a", "B": ""})
    p.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as e:
        list(read_jsonl(p, Item))
    assert str(e.value).startswith(f"{p}:3: field 'options'") and "option B is empty" in str(e.value)


def test_probes_are_seeded_and_stable():
    it = _item()
    sentences = {"A": "false a", "B": "true b", "C": "false c"}
    p1 = probes_from_bundle(it, sentences, "cue remapping", "Authority (Guideline / Discharge Note / SOP)", seed=5)
    p2 = probes_from_bundle(it, sentences, "cue_remapping", "authority", seed=5)
    assert p1 == p2
    assert [p.target for p in p1 if p.condition == "type1"] == ["A", "C"]
    assert sum(p.sampled for p in p1) == 1
    assert bundle_of(p1) == sentences
    # another seed changes the draws for some item
    draws = {
        tuple(sorted(p.id for p in probes_from_bundle(_item(id=f"i{k}"), sentences, "cue_remapping", "neutral", seed=s) if p.sampled))
        for k in range(5)
        for s in (1, 2)
    }
    assert len(draws) > 5
    with pytest.raises(ValueError, match="no context sentence for option"):
        probes_from_bundle(it, {"A": "x", "B": "y"}, "cue_remapping", "neutral", seed=1)


def test_suite_save_is_atomic_and_checksummed(tmp_path, tiny_suite):
    d = tmp_path / "s"
    tiny_suite.save(d)
    man = json.loads((d / "suite.json").read_text())
    assert man["counts"]["items"] == 4 and man["counts"]["type1"] == 12 and man["counts"]["type2"] == 4
    assert set(man["checksums"]) == {"items.jsonl", "probes.jsonl"}
    loaded = Suite.load(d)
    assert list(loaded.items) == list(tiny_suite.items) and loaded.probes == tiny_suite.probes

    broken = Suite(loaded.manifest, list(loaded.items.values()), [*loaded.probes, "not a probe"])  # fails mid-write
    with pytest.raises(Exception):
        broken.save(d)
    # the old suite is intact and no temporary directory is left behind
    assert Suite.load(d).probes == tiny_suite.probes
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_unknown_taxonomy_value_names_field(tmp_path, tiny_suite):
    d = tmp_path / "s"
    tiny_suite.save(d)
    lines = (d / "probes.jsonl").read_text().splitlines()
    o = json.loads(lines[0])
    o["provenance"] = "rumour"
    lines[0] = json.dumps(o)
    (d / "probes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        Suite.load(d, verify=False)
    assert ":1: field 'provenance'" in str(e.value) and "unknown provenance 'rumour'" in str(e.value)
