"""The short summary of a run's results: a headline table (per model and setting) as Markdown and
as a rich Table, with the family's headline columns and strata, the unread replies counted apart
(invalid; truncated: cut at the token budget) and, where an extraction model read some replies,
the share of labels it supplied. Every rate carries its 95% interval and n."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..family import get
from .audit_text import AuditBlock, audit_markdown
from .reading import why_text
from .results import RateValue, Results, headline_rates
from .stopping import stopping_lines

if TYPE_CHECKING:  # pragma: no cover
    from ..family import Family


def fmt_rate(r: RateValue | None) -> str:
    """A rate as a percentage with its interval and n; a mean score (`unit: "score"`, e.g. PCS on
    -1..1) as a signed number with its interval and n."""
    if r is None:
        return "—"
    if r.p is None or r.lo is None or r.hi is None:
        return f"— (n={r.n})"
    if getattr(r, "unit", None) == "score":  # declared by the rate's model, or kept among its extras
        return f"{r.p:+.2f} [{r.lo:+.2f}, {r.hi:+.2f}] n={r.n}"
    return f"{100 * r.p:.1f}% [{100 * r.lo:.1f}, {100 * r.hi:.1f}] n={r.n}"


def _rates(headline: Mapping[str, Mapping[str, object] | None]) -> dict[str, RateValue | None]:
    """A family's headline of one stratum (as its metrics wrote it), each rate a RateValue."""
    return {k: None if v is None else RateValue.model_validate(v) for k, v in headline.items()}


def headline_rows(results: Results, family: Family | None = None) -> list[tuple[str, str, list[str], dict[str, Any]]]:
    """(model, setting, headline cells, counts) per block; `family`: the results' family as the run
    resolved it (else looked up by the results' family name)."""
    family = family or get(results.family)
    rows = []
    for model, settings in results.typed_models().items():
        for setting, block in settings.items():
            h = headline_rates(family.measures.headline, block)
            rows.append((model, setting, [fmt_rate(h.get(k)) for k, _ in family.measures.columns], results.block(model, setting).get("counts", {})))
    return rows


def results_markdown(results: Results, family: Family | None = None) -> str:
    family = family or get(results.family)
    cols = family.measures.columns
    lines = [f"# Results: {results.run.suite or ''} ({family.title})", ""]
    lines.append("Rates are percentages with 95% Wilson intervals and n.")
    lines.append("")
    for w in results.warnings:
        lines += [f"> warning: {w}", ""]
    lines += [line for s in stopping_lines(results.stopping) for line in (f"> {s}", "")]
    lines.append("| Model | Setting | " + " | ".join(t for _, t in cols) + " | Errors | Invalid | Truncated |")
    lines.append("|" + "---|" * (len(cols) + 5))
    for model, setting, cells, counts in headline_rows(results, family):
        lines.append(
            f"| {model} | {setting} | " + " | ".join(cells) + f" | {counts.get('errors', 0)} | {counts.get('invalid', 0)} | {counts.get('truncated', 0)} |"
        )
    lines.append("")
    lines += reading_markdown(results)
    lines += audit_markdown(cast("AuditBlock | None", results.audit))  # validated as an AuditRecord with the results
    for model, settings in results.models.items():
        for setting, block in settings.items():
            lines.append(f"## {model} ({setting})")
            lines.append("")
            for group, title in family.measures.strata:
                lines.append(f"### {title}")
                lines.append("")
                lines.append("| Stratum | " + " | ".join(t for _, t in cols) + " |")
                lines.append("|" + "---|" * (len(cols) + 1))
                for key, b in block.get(group, {}).items():
                    h = _rates(family.measures.headline(b))
                    lines.append(f"| {key} | " + " | ".join(fmt_rate(h.get(k)) for k, _ in cols) + " |")
                lines.append("")
    lines += _means_markdown(results, dict(cols))
    if results.usage:
        lines.append("## Usage")
        lines.append("")
        lines.append("| Model | Calls | Errors | Batch replies | Live replies | Prompt tokens | Completion tokens | Cost as made | All live | All as a batch |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for m, u in results.usage.items():
            cost, live, batch = ("—" if v is None else f"${v:.4f}" for v in (u.cost, u.cost_live, u.cost_batch))
            live_calls = "—" if u.live_calls is None else u.live_calls
            lines.append(
                f"| {m} | {u.calls} | {u.errors} | {u.batch_calls} | {live_calls} | {u.prompt_tokens} | {u.completion_tokens} | {cost} | {live} | {batch} |"
            )
        lines.append("")
    return "\n".join(lines)


def _means_markdown(results: Results, titles: Mapping[str, str]) -> list[str]:
    """The mean of each headline rate across the models of a setting, with its range, named as
    the headline table names it; a setting run on one model has no mean to show."""
    lines = []
    for setting, agg in results.typed_means().items():
        means = ", ".join(
            f"{titles.get(k, k)}: {v.mean:+.2f} (range {v.min:+.2f}–{v.max:+.2f}, {v.models} models)"
            if v.unit == "score"
            else f"{titles.get(k, k)}: {100 * v.mean:.1f}% (range {100 * v.min:.1f}–{100 * v.max:.1f}, {v.models} models)"
            for k, v in agg.items()
            if v.models > 1
        )
        if means:
            lines.append(f"- {setting}: {means}")
    return ["## Mean across models", "", *lines, ""] if lines else []


def _extracting(results: Results) -> bool:
    return bool(results.run.options.get("extract")) or any(b.extracted for v in results.typed_reading().values() for b in v.values())


def reading_markdown(results: Results) -> list[str]:
    """How the replies were read, per model and setting (nothing for results without the counts)."""
    if not results.reading:
        return []
    lines = [
        "## How replies were read",
        "",
        "Unread replies (invalid: no readable answer; truncated: cut at the token budget before one) count as not "
        "correct in every rate above unless a rate says it leaves them out.",
        "",
        "| Model | Setting | Replies | Read | Read by extraction model | Invalid | Truncated | Unscored | Unread because |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for model, per_setting in results.typed_reading().items():
        for setting, b in per_setting.items():
            lines.append(
                f"| {model} | {setting} | {b.replies} | {b.read} | {fmt_rate(b.extracted_share)} | "
                f"{b.invalid} | {fmt_rate(b.truncated_share)} | {b.unscored} | {why_text(b.unread_why)} |"
            )
    return [*lines, ""]


def results_rows(results: Results, family: Family | None = None) -> tuple[str, list[str], list[list[str]]]:
    """(title, headers, rows) of the run's summary: metrics as rows, one column per model and
    setting, so that one model fits a narrow terminal (`cli.tables.fitted` lays out more)."""
    family = family or get(results.family)
    rows = headline_rows(results, family)
    headers = ["Metric", *[model if setting == "none" else f"{model} ({setting})" for model, setting, _, _ in rows]]
    body = [[title, *[cells[i] for _, _, cells, _ in rows]] for i, (_, title) in enumerate(family.measures.columns)]
    body.append(["Errors", *[str(c.get("errors", 0)) for *_, c in rows]])
    body.append(["Invalid", *[str(c.get("invalid", 0)) for *_, c in rows]])
    body.append(["Truncated", *[str(c.get("truncated", 0)) for *_, c in rows]])
    if _extracting(results):
        reading = results.typed_reading()
        body.append(["Read by extraction model", *[fmt_rate(reading[m][s].extracted_share if s in reading.get(m, {}) else None) for m, s, _, _ in rows]])
    return f"medresilience — {results.run.suite or ''}, {family.title} (95% CI, n)", headers, body
