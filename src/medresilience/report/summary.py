"""The short summary of a run's results: a headline table (per model and defense setting) as
Markdown and as a rich Table. Every rate carries its 95% interval and n."""

from __future__ import annotations

from typing import Any

from ..metrics import headline

COLUMNS = [
    ("clean_acc", "Clean acc"),
    ("type1_acc", "Type 1 acc"),
    ("type2_acc", "Type 2 acc"),
    ("type1_asr", "Type 1 ASR"),
    ("type1_tasr", "Type 1 TASR"),
    ("type2_asr", "Type 2 ASR"),
]


def fmt_rate(r: dict[str, Any] | None) -> str:
    if not r:
        return "—"
    if r.get("p") is None:
        return f"— (n={r.get('n', 0)})"
    return f"{100 * r['p']:.1f}% [{100 * r['lo']:.1f}, {100 * r['hi']:.1f}] n={r['n']}"


def headline_rows(results: dict[str, Any]) -> list[tuple[str, str, list[str], dict[str, Any]]]:
    rows = []
    for model, settings in results.get("models", {}).items():
        for setting, block in settings.items():
            h = headline(block["overall"])
            rows.append((model, setting, [fmt_rate(h[k]) for k, _ in COLUMNS], block["counts"]))
    return rows


def results_markdown(results: dict[str, Any]) -> str:
    lines = [f"# Results: {results.get('run', {}).get('suite', '')}", ""]
    lines.append("Rates are percentages with 95% Wilson intervals and n. ASR and TASR are over clean-correct pairs.")
    lines.append("")
    lines.append("| Model | Setting | " + " | ".join(t for _, t in COLUMNS) + " | Errors | Invalid |")
    lines.append("|" + "---|" * (len(COLUMNS) + 4))
    for model, setting, cells, counts in headline_rows(results):
        lines.append(f"| {model} | {setting} | " + " | ".join(cells) + f" | {counts['errors']} | {counts['invalid']} |")
    lines.append("")
    for model, settings in results.get("models", {}).items():
        for setting, block in settings.items():
            lines.append(f"## {model} ({setting})")
            lines.append("")
            for group in ("by_source", "by_content_type", "by_provenance"):
                lines.append(f"### {group.replace('by_', 'By ').replace('_', ' ')}")
                lines.append("")
                lines.append("| Stratum | " + " | ".join(t for _, t in COLUMNS) + " | McNemar p (T1) |")
                lines.append("|" + "---|" * (len(COLUMNS) + 2))
                for key, b in block.get(group, {}).items():
                    h = headline(b)
                    p = (b.get("type1") or {}).get("mcnemar", {}).get("p")
                    lines.append(f"| {key} | " + " | ".join(fmt_rate(h[k]) for k, _ in COLUMNS) + f" | {'—' if p is None else f'{p:.3g}'} |")
                lines.append("")
    mean = results.get("mean_across_models", {})
    if mean:
        lines.append("## Mean across models")
        lines.append("")
        for setting, agg in mean.items():
            cells = ", ".join(f"{k}: {100 * v['mean']:.1f}% (range {100 * v['min']:.1f}–{100 * v['max']:.1f}, {v['models']} models)" for k, v in agg.items())
            lines.append(f"- {setting}: {cells}")
        lines.append("")
    usage = results.get("usage", {})
    if usage:
        lines.append("## Usage")
        lines.append("")
        lines.append("| Model | Calls | Errors | Prompt tokens | Completion tokens | Cost |")
        lines.append("|---|---|---|---|---|---|")
        for m, u in usage.items():
            cost = "—" if u.get("cost") is None else f"${u['cost']:.4f}"
            lines.append(f"| {m} | {u['calls']} | {u['errors']} | {u['prompt_tokens']} | {u['completion_tokens']} | {cost} |")
        lines.append("")
    return "\n".join(lines)


def results_table(results: dict[str, Any]):
    """Metrics as rows, one column per model and setting: fits a narrow terminal."""
    from rich.table import Table

    rows = headline_rows(results)
    t = Table(title=f"medresilience — {results.get('run', {}).get('suite', '')} (95% Wilson CI, n)")
    t.add_column("Metric")
    for model, setting, _, _ in rows:
        t.add_column(model if setting == "no_defense" else f"{model} (defense)", justify="right")
    for i, (_, title) in enumerate(COLUMNS):
        t.add_row(title, *[cells[i] for _, _, cells, _ in rows])
    t.add_row("Errors", *[str(c["errors"]) for *_, c in rows])
    t.add_row("Invalid", *[str(c["invalid"]) for *_, c in rows])
    return t
