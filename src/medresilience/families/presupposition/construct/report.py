"""The build report of `medres build presupposition` (build_report.json / .md) and its decisions
(decisions.jsonl, one line per generated question and per myth that gave none)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....build.construction import write_build_files
from ....build.stages import StageStats, add_stage_stats, stage_table
from ....models.spec import ModelSpec
from ....suite import Suite
from ..taxonomy import CATEGORY_KEYS
from .loop import Decision, GeneratorRun

if TYPE_CHECKING:  # pragma: no cover
    from .build import PresuppositionBuildOptions


#: the order statuses are shown in
STATUSES = ("kept", "not_selected", "unsound", "unchecked", "candidate", "partial", "easy", "unscored", "no_answer", "rejected", "failed", "not_run")


def _sorted(c: Counter[str]) -> dict[str, int]:
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def _generator_block(ds: Sequence[Decision], run: GeneratorRun) -> dict[str, Any]:
    qs = [d for d in ds if d.question_id is not None]
    status = Counter(d.status for d in ds)
    scores = Counter(str(d.score) for d in qs if d.score is not None)
    return {
        "model": run.spec.label,
        "responder": run.responder.label,
        "myths": len({d.myth_id for d in ds if d.status != "not_run"}),
        "myths_failed": status.get("failed", 0),
        "myths_not_run": status.get("not_run", 0),
        "questions": len(qs),
        "rejected": status.get("rejected", 0),
        "answered": sum(1 for d in qs if d.status not in ("rejected", "no_answer")),
        "scores": {k: scores.get(k, 0) for k in ("-1", "0", "1")},
        "unscored": status.get("unscored", 0),
        "candidates": sum(1 for d in qs if d.score == -1),
        "kept": status.get("kept", 0),
        "statuses": {s: status[s] for s in STATUSES if status.get(s)},
        "stopped_after_round": run.stopped_at,
    }


def _reasons(decisions: Sequence[Decision]) -> dict[str, dict[str, int]]:
    """status -> reason -> count, for every status that carries a reason."""
    out: dict[str, Counter[str]] = {}
    for d in decisions:
        if d.reason:
            out.setdefault(d.status, Counter())[d.reason] += 1
    return {s: _sorted(out[s]) for s in STATUSES if s in out}


def _pool_history(run: GeneratorRun, limit: int = 40) -> list[dict[str, int]]:
    """The pool sizes after each round (every k-th round and the last when there are many)."""
    h = run.history
    if len(h) <= limit:
        return list(h)
    step = -(-len(h) // limit)
    return [x for i, x in enumerate(h) if i % step == 0 or i == len(h) - 1]


def cautions(generators: Sequence[ModelSpec], responder: ModelSpec | None, verifier: ModelSpec, checker: ModelSpec | None) -> list[str]:
    """What a reader of the suite should know about how far its questions were checked."""
    out = []
    for g in generators:
        if g.kind == "embedded":
            out.append(
                f"the generator {g.label} is the embedded {g.model} model, meant for trying the loop: a model this small often writes "
                "questions that hold no real false belief or give it away, and as its own responder it is fooled easily, so a "
                "question it kept says little about stronger models; build benchmark suites with strong generators and --verify"
            )
    if responder is not None and responder.kind == "embedded" and not any(g.kind == "embedded" for g in generators):
        out.append(f"the responder is the embedded {responder.model} model: questions that fool it may be easy for the models under test")
    if verifier.kind == "embedded":
        out.append(
            f"the verifier is the embedded {verifier.model} model: its -1/0/1 scores decide the pools and the candidates, and a "
            "judge this small is often wrong; use a strong verifier for a benchmark suite"
        )
    if checker is None:
        out.append(
            "no --verify checker: that each correction is medically sound was not checked by a model, only the deterministic checks "
            "ran; the study had physicians review every selected question: review a sample before a benchmark run"
        )
    else:
        out.append(
            f"corrections were checked by the model {checker.label}; a model is not a clinician: the study had physicians review every selected question"
        )
    return out


def build_report(
    suite: Suite,
    decisions: Sequence[Decision],
    runs: Sequence[GeneratorRun],
    balanced: Mapping[str, object],
    stages: Mapping[str, StageStats],
    options: PresuppositionBuildOptions,
    generators: Sequence[ModelSpec],
    responder: ModelSpec | None,
    verifier: ModelSpec,
    categoriser: ModelSpec,
    checker: ModelSpec | None,
    seconds: float,
) -> dict[str, Any]:
    totals = StageStats()
    for s in stages.values():
        add_stage_stats(totals, s)
    questions = [d for d in decisions if d.question_id is not None]
    kept = sum(1 for d in decisions if d.status == "kept")
    candidates = [d for d in questions if d.score == -1]
    call_errors = sum(1 for d in decisions if d.reason == "call_error")
    stopped = {r.name: r.stopped_at for r in runs if r.stopped_at is not None}
    cats = Counter(d.category or "uncategorised" for d in candidates)
    report: dict[str, Any] = {
        "suite": suite.manifest.name,
        "out": str(suite.path) if suite.path else None,
        "seed": options.seed,
        "generators": [g.label for g in generators],
        "responder": "same" if responder is None else responder.label,
        "verifier": verifier.label,
        "categoriser": categoriser.label,
        "checker": None if checker is None else checker.label,
        "questions_per_myth": options.questions,
        "examples": {"hard": options.hard, "easy": options.easy, "invalid": options.invalid},
        "round_size": options.round_size,
        "myths": suite.manifest.counts.get("myths", 0),
        "items": {
            "questions": len(questions),
            "rejected": sum(1 for d in questions if d.status == "rejected"),
            "unscored": sum(1 for d in questions if d.status == "unscored"),
            "scores": {k: sum(1 for d in questions if d.score == int(k)) for k in ("-1", "0", "1")},
            "candidates": len(candidates),
            "kept": kept,
            "probes": len(suite.probes),
        },
        "by_generator": {r.name: _generator_block([d for d in decisions if d.generator == r.name], r) for r in runs},
        "reasons": _reasons(decisions),
        "pools": {r.name: {"final": r.pools.sizes(), "rounds": len(r.history), "history": _pool_history(r)} for r in runs},
        "categories": {k: cats.get(k, 0) for k in (*CATEGORY_KEYS, "uncategorised") if cats.get(k)},
        "balancing": {
            "applied": options.balancing,
            "per_generator": options.per_generator,
            "per_category": options.per_category,
            "by_generator": dict(balanced),
        },
        "checker_counts": None
        if checker is None
        else {
            "checked": sum(1 for d in candidates if d.status in ("kept", "unsound", "unchecked")),
            "sound": sum(1 for d in candidates if d.status == "kept"),
            "unsound": sum(1 for d in candidates if d.status == "unsound"),
            "unchecked": sum(1 for d in candidates if d.status == "unchecked"),
        },
        "stages": {k: v.as_dict() for k, v in stages.items()},
        "totals": totals.as_dict(),
        "requests_per_kept_question": round(totals.requests / kept, 3) if kept else None,
        "calls_made_per_kept_question": round(totals.calls_made / kept, 3) if kept else None,
        "incomplete": bool(call_errors or stopped),
        "stopped": stopped,
        "seconds": round(seconds, 3),
        "prompt_hashes": suite.manifest.prompt_hashes,
        "cautions": cautions(generators, responder, verifier, checker),
        "notes": [],
    }
    if not options.balancing:
        report["notes"].append("no category balancing (neither --per-generator nor --per-category): every candidate the loop found is kept")
    if stopped:
        report["notes"].append(
            "the loop stopped early for "
            + ", ".join(f"{k} (after round {v})" for k, v in stopped.items())
            + " because calls failed; run the same command again to go on from there (stored calls are reused)"
        )
    elif call_errors:
        report["notes"].append(f"{call_errors} question(s) or myth(s) were left out because calls failed; run the same command again to retry them")
    return report


def report_markdown(report: Mapping[str, Any]) -> str:
    it = report["items"]
    lines = [
        f"# Build report: {report['suite']}",
        "",
        f"Generators {', '.join(f'`{g}`' for g in report['generators'])}; responder `{report['responder']}`; verifier "
        f"`{report['verifier']}`; categoriser `{report['categoriser']}`"
        + (f"; checker `{report['checker']}`" if report.get("checker") else "")
        + f"; seed {report['seed']}; round size {report['round_size']}; {report['seconds']:.1f} s.",
        "",
        f"{report['myths']} myths, {it['questions']} questions written: {it['rejected']} rejected by the checks, scores -1 / 0 / 1: "
        f"{it['scores']['-1']} / {it['scores']['0']} / {it['scores']['1']}, {it['unscored']} unscored; **{it['kept']}** kept of "
        f"{it['candidates']} candidates.",
        "",
    ]
    for c in report.get("cautions", ()):
        lines.append(f"> caution: {c}")
    for n in report.get("notes", ()):
        lines.append(f"> {n}")
    if report.get("cautions") or report.get("notes"):
        lines.append("")
    lines += [
        "| Generator | myths | failed | questions | rejected | -1 | 0 | 1 | unscored | candidates | kept |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, g in report["by_generator"].items():
        s = g["scores"]
        lines.append(
            f"| {name} | {g['myths']} | {g['myths_failed']} | {g['questions']} | {g['rejected']} | {s['-1']} | {s['0']} | {s['1']} | "
            f"{g['unscored']} | {g['candidates']} | {g['kept']} |"
        )
    lines.append("")
    if report.get("reasons"):
        lines += ["| Status | reason | count |", "|---|---|---:|"]
        lines += [f"| {s} | {r} | {n} |" for s, rs in report["reasons"].items() for r, n in rs.items()] + [""]
    for name, p in report["pools"].items():
        lines += [
            f"Pools of `{name}` after each round (valid = seeds + questions scored -1; easy = questions scored 1):",
            "",
            "| round | myths | valid | easy |",
            "|---:|---:|---:|---:|",
        ]
        lines += [f"| {h['round']} | {h['myths']} | {h['valid']} | {h['easy']} |" for h in p["history"]] + [""]
    b = report["balancing"]
    if b["applied"]:
        lines += [
            f"Category balancing (Algorithm 1): per generator {b['per_generator'] or '—'}, per category {b['per_category'] or '—'}.",
            "",
            "| Generator | category | before | after |",
            "|---|---|---:|---:|",
        ]
        for name, g in b["by_generator"].items():
            for cat in sorted(set(g["before"]) | set(g["after"]), key=lambda c: (CATEGORY_KEYS + ("uncategorised",)).index(c)):
                lines.append(f"| {name} | {cat} | {g['before'].get(cat, 0)} | {g['after'].get(cat, 0)} |")
        lines.append("")
    elif report.get("categories"):
        lines += ["| Category | candidates |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in report["categories"].items()] + [""]
    c = report.get("checker_counts")
    if c:
        lines += [
            f"Checker `{report['checker']}`: {c['checked']} checked, {c['sound']} sound, {c['unsound']} unsound (dropped), "
            f"{c['unchecked']} not readable (dropped).",
            "",
        ]
    if report.get("stages"):
        lines += stage_table(report["stages"], report["totals"])
    if report.get("requests_per_kept_question") is not None:
        lines += [f"Requests per kept question: {report['requests_per_kept_question']}.", ""]
    lines += ["Per-question decisions, with reasons: decisions.jsonl.", ""]
    return "\n".join(lines)


def write_report(out: Path, report: Mapping[str, object], decisions: Sequence[Decision]) -> None:
    write_build_files(out, report, report_markdown(report), (d.as_dict() for d in decisions))
