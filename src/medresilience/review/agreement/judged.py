"""The answers of a run that an LLM judge scored, with their verdicts (read from the run's store),
and the judge rubric the run recorded for a scorer."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...runtime.errors import ConfigError, InputError
from ...runtime.jsontypes import JSONObject

if TYPE_CHECKING:  # pragma: no cover
    from ...scoring.judge import Rubric


@dataclass(frozen=True)
class JudgedUnit:
    """One planned answer of a run with its judge's verdict (`status`: valid, unscored, or
    missing when the answer or the judge call never produced a score)."""

    model: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    setting: str
    scorer: str
    status: str
    label: str | None
    value: float | None


def rubric_name(scorer: str) -> str | None:
    """The rubric of a judge scorer name (`judge:<rubric>@<hash>:<judge model>#<config>`)."""
    m = re.match(r"^judge:([^@]+)@", scorer)
    return m.group(1) if m else None


def rubric_hash(scorer: str) -> str | None:
    m = re.match(r"^judge:[^@]+@([0-9a-f]+):", scorer)
    return m.group(1) if m else None


def _json_rubrics(value: object) -> Iterator[JSONObject]:
    """Every rubric-like JSON object among the texts a run recorded (its prompts)."""
    if isinstance(value, dict):
        if "verdicts" in value and "name" in value:
            yield value
        for v in value.values():
            yield from _json_rubrics(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_rubrics(v)
    elif isinstance(value, str) and value.lstrip().startswith("{") and '"verdicts"' in value:
        try:
            yield from _json_rubrics(json.loads(value))
        except ValueError:
            return


def recorded_rubric(config: Mapping[str, object], scorer: str) -> Rubric | None:
    """The judge rubric the run recorded for a scorer (matched by name and hash), or None."""
    from ...scoring.judge import Rubric

    name, digest = rubric_name(scorer), rubric_hash(scorer)
    for data in _json_rubrics(config.get("prompts") or {}):
        try:
            r = Rubric.model_validate(data)
        except ValueError:
            continue
        if r.name == name and r.hash == digest:
            return r
    return None


@dataclass
class RunJudgements:
    run_dir: Path
    run_id: str | None
    config: JSONObject
    units: list[JudgedUnit]
    scorers: list[str]


def judged_units(run_dir: Path | str, judge: str | None = None) -> RunJudgements:
    """The units of a run's latest run that a judge scored (all judges, or those whose scorer name
    is or contains `judge`: a rubric name, a judge model label, the full name)."""
    from ...store import Store

    run_dir = Path(run_dir)
    db = run_dir / "store.sqlite"
    if not db.is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    with Store.read_only(db) as store:
        run = store.latest_run()
        rows = list(store.unit_results(run, judged=True))
        cfg = store.run_config(run) if run else None
    config = cfg.data if cfg is not None else {}
    all_scorers = sorted({r.scoring for r in rows})
    if not all_scorers:
        raise ConfigError("RUN_DIR", f"{run_dir}: no answer of the latest run was scored by an LLM judge")
    scorers = all_scorers
    if judge:
        scorers = [s for s in all_scorers if s == judge] or [s for s in all_scorers if judge in s]
        if not scorers:
            raise ConfigError("--judge", f"no judge of {run_dir} is named '{judge}' (judges: {', '.join(all_scorers)})")
    keep = set(scorers)
    units = []
    for r in rows:
        if r.scoring not in keep:
            continue
        status = r.status if r.call_status == "ok" and r.status in ("valid", "unscored", "invalid") else "missing"
        if status == "valid" and r.value is None:
            status = "unscored"  # a verdict without a value cannot be compared on a numeric scale
        value = None if r.value is None else float(r.value)
        units.append(JudgedUnit(r.model, r.unit_id, r.item_id, r.probe_id, r.condition, r.setting, r.scoring, status, r.label, value))
    return RunJudgements(run_dir, run, config, units, scorers)
