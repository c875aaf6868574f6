"""`medres overlap RUN` (the units no model gets right, only one model gets right) and `medres
thinking RUN` (seconds, completion and reasoning tokens per answer beside the share right): thin."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .kit import console, user_errors


def _pct(s) -> str:
    if s["p"] is None:
        return f"— (n={s['n']})"
    ival = f" [{100 * s['lo']:.1f}, {100 * s['hi']:.1f}]" if s["lo"] is not None else ""
    return f"{s['k']}/{s['n']}, {100 * s['p']:.1f}%{ival}"


def overlap_cmd(run: Annotated[Path, typer.Argument(help="run directory")]) -> None:
    """Per condition and setting: units no model gets right, every model gets right, only one model gets right."""
    from ..analyses.overlap import overlap

    res = overlap(run)
    console.print(f"models: {', '.join(res.models)}", highlight=False, markup=False, soft_wrap=True)
    for r in res.rows:
        left = f" ({r['left_out']} left out: some model has no score)" if r["left_out"] else ""
        console.print(
            f"{r['condition']} / {r['setting']}: {r['compared']} units{left}; no model right {_pct(r['none_right'])}; "
            f"every model right {_pct(r['all_right'])}; only one model right {_pct(r['only_one_right'])} ("
            + ", ".join(f"{m} {k}" for m, k in r["only_this_model"].items())
            + ")",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def thinking_cmd(run: Annotated[Path, typer.Argument(help="run directory")]) -> None:
    """Per model, setting and condition: seconds per answer (bootstrap over items), completion tokens and reported reasoning tokens per answer, share right."""
    from ..analyses.thinking import thinking_time

    for r in thinking_time(run):
        secs = "—" if r["seconds_per_answer"] is None else f"{r['seconds_per_answer']:.2f} s"
        if r["seconds_lo"] is not None:
            secs += f" [{r['seconds_lo']:.2f}, {r['seconds_hi']:.2f}]"
        toks = "—" if r["completion_tokens_per_answer"] is None else f"{r['completion_tokens_per_answer']:.0f}"
        if r["reasoning_tokens_per_answer"] is None:
            thought = "reasoning tokens not reported"
        else:
            shy = f", reported by {r['reasoning_reported']} of {r['answers']} answers" if r["reasoning_reported"] < r["answers"] else ""
            thought = f"{r['reasoning_tokens_per_answer']:.0f} reasoning tokens per answer{shy}"
        right = "—" if r["right"] is None else f"{100 * r['right']:.1f}%"
        console.print(
            f"{r['model']} / {r['setting']} / {r['condition']}: {secs} per answer (n={r['items']} items), {toks} completion tokens per answer, {thought}, "
            f"right {right} (n={r['right_n']})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    app.command("overlap")(user_errors(overlap_cmd))
    app.command("thinking")(user_errors(thinking_cmd))
