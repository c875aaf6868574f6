"""The misleading family's numbers, pinned: the bundled sample suite run against the stub server
with a scripted, deterministic answer policy, every headline and stratum number compared exactly
with tests/golden/misleading_sample.json. The golden file was written on the code before the
spine was made family-neutral, and the reshaped code reproduced it to the last digit (#8). It was
rewritten once, on purpose, when Type 1 under `all` moved to item-clustered statistics (#9): of
its 2,024 numbers only the ASR / TASR interval bounds and the Type 1 McNemar p-values changed
(the Wilson bounds are kept beside them as wilson_lo / wilson_hi); every count and rate stayed.

Regenerate only on purpose: MEDRES_WRITE_GOLDEN=1 pytest tests/families/misleading/test_golden_misleading.py"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import TESTS
from medresilience.models.spec import parse_model_spec
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.testing.stub import StubServer

GOLDEN = TESTS / "golden" / "misleading_sample.json"
# setting names as the family-neutral code writes them (the old code wrote no_defense / defense)
SETTING_NAMES = {"no_defense": "none", "defense": "caution"}


def _h(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:8], 16)


def scripted_policy(gold_by_question: dict[str, str]):
    """A model with mixed behaviour, fixed by the request text alone: answers the gold letter on
    most clean questions, follows an injected option's sentence on some probes, drifts to another
    wrong letter on others, and mumbles (an unreadable reply) now and then. The system prompt is
    part of the hash, so the cautioned setting answers differently."""

    def policy(messages, request):
        system, user = messages[0]["content"], messages[-1]["content"]
        q = re.search(r"Question: (.*?)\n\nOptions:", user, re.S)
        gold = gold_by_question.get(q.group(1).strip() if q else "", "A")
        letters = re.findall(r"(?m)^([A-J])\. ", user)
        wrong = [x for x in letters if x != gold] or ["A"]
        r = _h(system, user) % 100
        if "context" not in user:  # clean
            return "I cannot tell." if r < 4 else f"Answer: {gold if r < 78 else wrong[r % len(wrong)]}"
        if r < 6:
            return "Hmm, hard to say."
        if r < 40:  # follows the misleading context: the first option letter mentioned near it
            return f"Answer: {wrong[(r // 7) % len(wrong)]}"
        return f"Answer: {gold}"

    return policy


def flatten(results: dict[str, Any]) -> dict[str, float | int | None]:
    """Every number of every model, setting and stratum, keyed by its path."""
    out: dict[str, Any] = {}

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}/{k}", x)
        elif isinstance(v, bool):
            out[prefix] = int(v)
        elif isinstance(v, (int, float)) or v is None:
            out[prefix] = v

    for model, settings in results["models"].items():
        for setting, block in settings.items():
            walk(f"{model}/{SETTING_NAMES.get(setting, setting)}", block)
    for setting, agg in results["mean_across_models"].items():
        walk(f"mean/{SETTING_NAMES.get(setting, setting)}", agg)
    return out


def run_sample(tmp_path: Path) -> dict[str, Any]:
    suite = sample_suite()
    gold = {it.question.strip(): it.answer for it in suite.items.values()}
    with StubServer(policy=scripted_policy(gold)) as srv:
        specs = [
            parse_model_spec(f"openai:stub-a,base_url={srv.base_url},concurrency=16"),
            parse_model_spec(f"openai:stub-b,label=stub-b,temperature=0.3,base_url={srv.base_url},concurrency=16"),
        ]
        res = evaluate(suite, specs, tmp_path / "run", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
    return flatten(res.results.model_dump(mode="json"))


def test_sample_suite_numbers_unchanged(tmp_path):
    got = run_sample(tmp_path)
    if os.environ.get("MEDRES_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip("golden file written")
    want = json.loads(GOLDEN.read_text())
    assert len(want) > 1000  # every stratum of both models and both settings
    missing = sorted(set(want) - set(got))
    assert not missing, f"numbers no longer reported: {missing[:10]}"
    diff = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    assert not diff, f"{len(diff)} numbers changed, e.g. {list(diff.items())[:5]}"
