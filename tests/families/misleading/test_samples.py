"""The bundled sample suite: complete, balanced, and identical to a fresh rebuild from its
release-layout source by the importer."""

from __future__ import annotations

import filecmp
from collections import Counter

from medresilience.families.misleading.rebuild_bundled import build_sample_suite
from medresilience.families.misleading.taxonomy import CONTENT_TYPE_KEYS, PROVENANCE_KEYS
from medresilience.run.bundled_suite import sample_suite, sample_suite_dir
from medresilience.suite import Suite


def test_sample_suite_is_complete_and_balanced():
    s = sample_suite()
    assert len(s.items) >= 40
    bundles = {p.bundle_id: p for p in s.probes}
    assert len(bundles) == len(s.items)
    assert set(Counter(p.content_type for p in bundles.values())) == set(CONTENT_TYPE_KEYS)
    assert set(Counter(p.provenance for p in bundles.values())) == set(PROVENANCE_KEYS)
    for it in s.items.values():
        probes = s.probes_for(it.id)
        t1 = [p for p in probes if p.condition == "type1"]
        assert sorted(p.target for p in t1) == it.wrong_options
        assert sum(p.sampled for p in t1) == 1
        (t2,) = [p for p in probes if p.condition == "type2"]
        assert {c.option for c in t2.context} == set(it.options)


def test_shipped_suite_equals_rebuild(tmp_path):
    rebuilt = build_sample_suite().save(tmp_path / "basic_medicine")
    for f in ("items.jsonl", "probes.jsonl", "suite.json"):
        assert filecmp.cmp(rebuilt / f, sample_suite_dir() / f, shallow=False), f"{f} is stale: run python -m medresilience.families.misleading.rebuild_bundled"
    assert len(Suite.load(rebuilt).probes) == len(sample_suite().probes)
