"""`medres judge-agreement RUN_DIR --labels FILE`: how far a run's LLM judge agrees with human
labels (thin: parse, call medresilience.review.agreement, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    """Add the `judge-agreement` command to the main app."""
    from .kit import console, err_console, user_errors

    @app.command("judge-agreement")
    @user_errors
    def judge_agreement_cmd(
        run_dir: Annotated[Path, typer.Argument(help="run directory (its store.sqlite holds the judge's verdicts)")],
        labels: Annotated[
            Path,
            typer.Option(
                "--labels", help="human labels: CSV/Parquet (unit_id or item_id, model, label or label_1, label_2, ...), a review directory or its ratings.csv"
            ),
        ],
        judge: Annotated[
            Optional[str], typer.Option("--judge", help="the judge to compare (its rubric, model or scorer name) when the run has several")
        ] = None,
        out: Annotated[Optional[Path], typer.Option("--out", help="also write the JSON here (it is always saved as RUN_DIR/judge_agreement.json)")] = None,
        label_column: Annotated[Optional[list[str]], typer.Option("--label-column", help="a column holding a label (repeat for several annotators)")] = None,
        combine: Annotated[
            str,
            typer.Option(
                "--combine", help="several annotators: their mean rounded to the scale, a half going up (half_up, the study's rule) or down (half_down)"
            ),
        ] = "half_up",
        positive: Annotated[
            Optional[list[float]],
            typer.Option("--positive", help="a verdict value that counts as positive in the binary view (repeatable; default: the top of the scale)"),
        ] = None,
        resamples: Annotated[int, typer.Option("--resamples", help="bootstrap resamples for the kappa intervals")] = 2000,
        seed: Annotated[int, typer.Option("--seed", help="bootstrap seed")] = 0,
    ) -> None:
        """Agreement of a run's LLM judge with human labels: exact and binary agreement (Wilson),
        Cohen's kappa and Gwet's AC2 (bootstrap), the confusion matrix; saved as judge_agreement.json."""
        from rich.table import Table

        from ..review.agreement import RESULT_FILE, judge_agreement

        res = judge_agreement(
            run_dir, labels, judge=judge, label_columns=label_column, combine_rule=combine, positive=positive, n_resamples=resamples, seed=seed
        )
        study = res.study
        scale = ", ".join(_show(v) for v in res.scale)
        top = "/".join(_show(v) for v in res.positive)
        t = Table(title=f"Judge vs human labels: {res.rubric or 'judge'} (n = {res.n} matched answers, 95% intervals)")
        t.add_column("Measure")
        t.add_column("This run")
        if study:
            t.add_column(f"Study ({study.who}, n = {study.n})")
        rows = [
            (f"Exact agreement ({scale})", res.exact.fmt(), _pct(study.exact) if study else None),
            (f"Binary agreement ({top} vs not)", res.binary.fmt(), _pct(study.binary) if study else None),
            (f"Cohen's kappa ({res.kappa_weights})", _coef(res.cohen_kappa), "—" if study else None),
            ("Gwet's AC2 (ordinal weights)", _coef(res.gwet_ac2), "—" if study else None),
        ]
        for name, ours, theirs in rows:
            t.add_row(name, ours, *([theirs] if study else []))
        console.print(t)
        if res.n:
            c = Table(title="Confusion matrix (rows: human, columns: judge)")
            c.add_column("human \\ judge")
            for v in res.scale:
                c.add_column(_show(v), justify="right")
            c.add_column("judge right", justify="right")
            for v, row in zip(res.scale, res.confusion):
                c.add_row(_show(v), *(str(x) for x in row), res.by_human_value[_show(v)].fmt())
            console.print(c)
        if res.inter_annotator and res.inter_annotator["n"]:
            ia = res.inter_annotator
            console.print(
                f"annotators ({', '.join(ia['annotators'])}) with each other, on the {ia['n']} answers two or more labelled: "
                f"exact {_pct(ia['exact']['value'])}, binary {_pct(ia['binary']['value'])}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        ex, un = res.excluded, res.unmatched
        console.print(
            f"left out: {un['labels']} labels match no judged answer, {un['judged_unlabelled']} judged answers have no label, "
            f"{un['unjudged_unlabelled']} unlabelled answers without a verdict yet, "
            f"{ex['judge_unscored']} labelled answers the judge left unscored, {ex['judge_missing']} without a verdict "
            f"(a failed call, or one not made yet), {ex['labels_blank']} blank labels",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        if un["label_examples"]:
            err_console.print("note: unmatched labels, e.g. " + "; ".join(un["label_examples"]), highlight=False, markup=False, soft_wrap=True)
        saved = res.save(Path(run_dir) / RESULT_FILE)
        if out is not None:
            res.save(out)
        console.print(f"saved: {saved}" + (f" and {out}" if out is not None else ""), highlight=False, markup=False, soft_wrap=True)


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _pct(p: float | None) -> str:
    return "—" if p is None else f"{100 * p:.1f}%"


def _coef(a) -> str:
    return "—" if a is None else a.fmt()
