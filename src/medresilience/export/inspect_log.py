"""A run as an inspect_ai eval log, written as plain JSON (inspect_ai is not imported: its log is
a documented JSON shape, checked by reading our logs back with inspect_ai in the tests, so a run
exports without its ~40 dependencies installed).

One sample per unit: the messages sent (`input`), the reply (`output`, with its tokens and
latency), the score under the unit's scoring (value, the label as `answer`, the judge's reason or
how the label was read as `explanation`; a unit without a valid score keeps its score with value
NaN, inspect's unscored sentinel, and the reason: an unread or truncated reply, a judge that could
not decide), a failed call as the sample's `error`, and metadata with the family, model, setting,
condition and facets. `results` holds the family's headline metrics of each model and setting
(value, interval and n), recomputed from the store as the report does.

Two containers, by the file's suffix: `.eval` (inspect's default: a zip with one member per
sample, written as the units stream) or `.json` (one JSON document, samples streamed into it)."""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NotRequired, TypedDict

from .. import __version__
from ..run.results import RateValue, headline_rates
from ..runtime.errors import ConfigError
from ..runtime.fileio import atomic_write
from ..store import UnitRecord
from .units import RunUnits, detail_of

NAN = float("nan")
#: inspect's stop reasons for the finish reasons a call records
_STOP = {"stop": "stop", "length": "max_tokens", "content_filter": "content_filter", "tool_calls": "tool_calls"}
#: inspect's reasons for a score that is not a value, by the unit's status
_UNSCORED = {"invalid": "invalid_response_format", "truncated": "truncated", "unscored": "grader_failed"}
#: how much of the last user message a sample summary keeps (the full input is in the sample)
SUMMARY_INPUT_CHARS = 400


class _Message(TypedDict):
    """A chat message as an inspect log holds it."""

    role: str
    content: str
    source: str
    model: NotRequired[str]


class _Totals(TypedDict, total=False):
    """What the samples written so far add up to, for the log's header."""

    samples: int
    completed: int
    usage: dict[str, dict[str, int]]
    scores: list[dict[str, object]]


def _created(run_id: str) -> str:
    """The run's start as ISO time, read from its id (YYYYmmddTHHMMSS-...)."""
    try:
        return datetime.strptime(run_id[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC).isoformat()
    except ValueError:
        return datetime.now(UTC).isoformat(timespec="seconds")


def _messages(text: str | None) -> list[_Message]:
    try:
        msgs = json.loads(text) if text else []
    except json.JSONDecodeError:
        return []
    return [{"role": m.get("role", "user"), "content": m.get("content") or "", "source": "input"} for m in msgs if isinstance(m, dict)]


def _score(u: UnitRecord, row: Mapping[str, object]) -> dict[str, dict[str, object]]:
    status = row["status"]
    if status in ("error", "missing"):
        return {}
    valid = status == "valid" and u.value is not None
    detail = detail_of(u.detail) or None
    score: dict[str, object] = {
        "value": u.value if valid else NAN,
        "answer": u.label,
        "explanation": row["reason"] or row["read"],
        "metadata": {"status": status, "read": row["read"], "detail": detail},
        "history": [],
    }
    if not valid:
        score["reason"] = _UNSCORED.get(str(status), "scoring_failed")
    return {u.scoring: score}


def _usage(u: UnitRecord) -> dict[str, object]:
    pt, ct = u.prompt_tokens or 0, u.completion_tokens or 0
    usage: dict[str, object] = {"input_tokens": pt, "output_tokens": ct, "total_tokens": pt + ct}
    if u.cost is not None:
        usage["total_cost"] = u.cost
    return usage


def sample(n: int, u: UnitRecord, row: Mapping[str, object], facets: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, object]]:
    """(the inspect sample of one unit, its summary) for sample id `n`."""
    inputs = _messages(u.messages)
    meta = {k: row[k] for k in ("family", "run", "model", "setting", "unit_id", "item_id", "probe_id", "condition", "source", "subject")}
    meta["facets"] = {f: row[f] for f in facets}
    meta.update({k: row[k] for k in ("status", "call_status", "attempts", "finish_reason", "latency_s", "cost", "key")})
    usage = _usage(u)
    scores = _score(u, row)
    out: dict[str, object] = {"model": u.model, "choices": [], "completion": u.reply or "", "usage": usage}
    messages = list(inputs)
    if u.reply is not None:
        reply: _Message = {"role": "assistant", "content": u.reply, "source": "generate", "model": u.model}
        out["choices"] = [{"message": reply, "stop_reason": _STOP.get(u.finish_reason or "", "unknown")}]
        messages.append(reply)
    if u.latency_s is not None:
        out["time"] = u.latency_s
    target = row["gold"] if row["gold"] is not None else ""
    s: dict[str, object] = {
        "id": n,
        "epoch": u.epoch + 1,
        "input": inputs,
        "target": target,
        "messages": messages,
        "output": out,
        "scores": scores,
        "metadata": meta,
        "store": {},
        "events": [],
        "model_usage": {u.model: usage},
        "attachments": {},
    }
    if u.latency_s is not None:
        s["total_time"] = s["working_time"] = u.latency_s
    error = None
    if row["status"] == "error":
        error = u.error or "the call failed"
        s["error"] = {"message": error, "traceback": "", "traceback_ansi": ""}
    last_user = next((m["content"] for m in reversed(inputs) if m["role"] == "user"), "")
    summary = {
        "id": n,
        "epoch": u.epoch + 1,
        "input": last_user[:SUMMARY_INPUT_CHARS],
        "target": target,
        "metadata": meta,
        "scores": scores,
        "model_usage": {u.model: usage},
        "completed": True,
        "message_count": len(messages),
        "error": error,
    }
    return s, summary


def _rate_metric(key: str, title: str, rate: RateValue) -> dict[str, object]:
    p = rate.p
    shown = rate.model_dump()
    meta: dict[str, object] = {"title": title, **{k: shown[k] for k in ("lo", "hi", "n", "k", "unit") if k in shown}}
    return {"name": key, "value": NAN if p is None else float(p), "params": {}, "metadata": meta}


def results_scores(run: RunUnits) -> list[dict[str, object]]:
    """The family's headline metrics of each model and setting of the run (recomputed from the
    store and the suite, as the report does), one inspect EvalScore each."""
    from ..report.rundir import load_run

    blocks = load_run(run.path, keep_frame=False).blocks
    scoring = (run.config.get("options") or {}).get("scoring") or "score"
    out: list[dict[str, object]] = []
    for model, settings in blocks.items():
        for setting, block in settings.items():
            head = headline_rates(run.family.measures.headline, block)
            metrics = {key: _rate_metric(key, title, rate) for key, title in run.family.measures.columns if (rate := head.get(key))}
            out.append({"name": f"{model}/{setting}", "scorer": scoring, "params": {}, "metrics": metrics, "metadata": {"model": model, "setting": setting}})
    return out


def header(run: RunUnits, totals: _Totals, with_results: bool = True) -> dict[str, object]:
    """The log without its samples: the eval spec (task, dataset, models), plan, results, stats."""
    models = list(totals["usage"]) or [str(m.get("label")) for m in run.config.get("models") or []]
    suite = run.suite.manifest
    spec = {
        "eval_id": hashlib.sha256(f"{run.path.resolve()}|{run.run_id}".encode()).hexdigest()[:22],
        "run_id": run.run_id,
        "created": _created(run.run_id),
        "task": f"medresilience/{run.family.name}",
        "task_id": suite.name,
        "task_version": 0,
        "task_attribs": {},
        "task_args": {},
        "task_args_passed": {},
        "solver_args_passed": {},
        "dataset": {"name": suite.name, "location": str((run.config.get("suite") or {}).get("path") or ""), "samples": totals["samples"]},
        "model": models[0] if len(models) == 1 else ", ".join(models) or "none",
        "model_generate_config": {},
        "model_args": {},
        "config": {},
        "packages": {"medresilience": __version__},
        "metadata": {"family": run.family.name, "run_dir": str(run.path), "models": models, "options": run.config.get("options") or {}},
    }
    log: dict[str, object] = {"version": 2, "status": "success", "eval": spec, "plan": {"name": "plan", "steps": [], "config": {}}}
    if with_results:
        log["results"] = {"total_samples": totals["samples"], "completed_samples": totals["completed"], "scores": run_scores(run, totals)}
    log["stats"] = {"started_at": spec["created"], "completed_at": "", "model_usage": totals["usage"], "role_usage": {}, "connection_limit_history": []}
    log.update({"invalidated": False, "tags": [], "metadata": {}})
    return log


def run_scores(run: RunUnits, totals: _Totals) -> list[dict[str, object]]:
    return totals.setdefault("scores", results_scores(run))


def _dump(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _samples(run: RunUnits, totals: _Totals):
    """(id, sample, summary) of every unit, tallying the counts and tokens the header reports."""
    facets = run.facets
    for n, (u, row) in enumerate(run.records(), start=1):
        s, summary = sample(n, u, row, facets)
        totals["samples"] += 1
        totals["completed"] += row["status"] != "error"
        use = totals["usage"].setdefault(u.model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
        for k in ("input_tokens", "output_tokens", "total_tokens"):
            use[k] += s["output"]["usage"][k]
        yield n, u.epoch + 1, s, summary


def _new_totals() -> _Totals:
    return {"samples": 0, "completed": 0, "usage": {}}


def _write_eval(run: RunUnits, fh: IO[bytes]) -> int:
    totals = _new_totals()
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf, tempfile.TemporaryFile("w+", encoding="utf-8") as summaries:
        for n, epoch, s, summary in _samples(run, totals):
            zf.writestr(f"samples/{n}_epoch_{epoch}.json", _dump(s))
            summaries.write(("," if n > 1 else "") + _dump(summary))
        summaries.seek(0)
        with zf.open("summaries.json", "w") as member:
            member.write(b"[")
            while chunk := summaries.read(1 << 20):
                member.write(chunk.encode("utf-8"))
            member.write(b"]")
        zf.writestr("_journal/start.json", _dump(header(run, totals, with_results=False)))
        zf.writestr("header.json", _dump(header(run, totals)))
    return totals["samples"]


def _write_json(run: RunUnits, fh: IO[str]) -> int:
    totals = _new_totals()
    fh.write('{"samples": [')
    for n, _epoch, s, _summary in _samples(run, totals):
        fh.write(("," if n > 1 else "") + "\n" + _dump(s))
    fh.write("\n]")
    for k, v in header(run, totals).items():
        fh.write(f",\n{_dump(k)}: {_dump(v)}")
    fh.write("}\n")
    return totals["samples"]


def write_inspect_log(run: RunUnits, out: Path | str) -> int:
    """Write `run` as an inspect_ai eval log (`.eval` or `.json`, by the suffix of `out`),
    atomically; returns how many samples (units) it holds."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".eval", ".json"):
        raise ConfigError("--out", f"an inspect log is a .eval or .json file, not {out.name!r}")
    if suffix == ".eval":
        with atomic_write(out, "wb") as fh:
            return _write_eval(run, fh)
    with atomic_write(out) as fh:
        return _write_json(run, fh)
