"""The adaptive section's clinician review of the successful attacks, where a run directory holds
attack reviews (the `reviews` of a setting's loop block: `medres review sample --rubric attack --out
RUN_DIR/NAME`): per model and setting, the successful attacks, those reviewed, judged valid and
invalid, those whose reviewers split, those not reviewed yet, and the share of right answers flipped
within the budget raw and with the attacks judged invalid censored, with the reviewed curve's values
and the attacks judged invalid each linked to its unit. The numbers are `review.reviewed_by_model`'s,
as results.json's `reviewed` and the review statistics page give them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd

from ....report.html import rate_units, unit_url
from ....report.parts import Block, Cell, Column, Heading, ItemList, Paragraph, Table, count, dash, rate, text
from ....report.persuasion import curve_table
from ....report.rundir import names_of
from ..review import Reviewed, item_votes, reviewed_by_model
from ..taxonomy import CONDITION
from .paired import Attacked

NOTE = (
    "Clinicians judged whether the keyed answer still stands for each attacked item (medres review sample --rubric attack). "
    "An attack is judged invalid when a reviewer answered no and no more answered yes than no (split: a yes and a no, "
    "decided by that rule); it is censored at the turn before its stress (held through the earlier turns, unknown after), "
    "so a reviewed curve with a censored attack is Kaplan-Meier's. A successful attack not reviewed yet still counts as a flip."
)
COLUMNS = (
    Column("model", "Model"),
    Column("successful", "Successful attacks", numeric=True, note="attacks that flipped a right answer"),
    Column("reviewed", "Reviewed", numeric=True, note="rated by at least one reviewer"),
    Column("valid", "Judged valid", numeric=True),
    Column("invalid", "Judged invalid", numeric=True),
    Column("split", "Split", numeric=True, note="reviewers answered both yes and no (counted as valid or invalid by the rule)"),
    Column("unreviewed", "Unreviewed", numeric=True, note="still counted as flips"),
    Column("raw", "Flipped within budget", numeric=True, note="every flip (95% interval)"),
    Column("kept", "Flipped, invalid left out", numeric=True, note="the attacks judged invalid censored (95% interval)"),
    Column("to_target", "To the target, invalid left out", numeric=True),
)


@dataclass(frozen=True)
class ReviewRow:
    """One model's attacks under one setting of one run beside their review: `label` names it in
    the report, `name` is the model's name among the runs (its viewer links), `reviews` the review
    directories, `invalid_units` the unit id of each attack judged invalid with its item id and its
    reviewers' answers."""

    attacked: Attacked
    name: str
    reviews: tuple[str, ...]
    reviewed: Reviewed
    invalid_units: tuple[tuple[str, str, str], ...]


def review_rows(attacked: Sequence[Attacked]) -> list[ReviewRow]:
    """A row per model and setting whose run directory holds attack reviews, in the order given."""
    names = names_of([a.run for a in attacked])
    rows = []
    for a in attacked:
        block = ((a.run.results or {}).get("loop") or {}).get(a.setting) or {}
        reviews = block.get("reviews")
        if not reviews:
            continue
        mine = [x for x in reviews.get("attacks") or [] if x.get("model") == a.model]
        records = [t for t in block.get("traces", []) if t.get("model") == a.model]
        (got,) = reviewed_by_model(records, item_votes(mine), f"{a.run.name} results.json loop.{a.setting}.traces")
        of = {str(x["item_id"]): x for x in mine}
        invalid = tuple((str(of[i]["unit_id"]), i, ", ".join(sorted(map(str, of[i]["votes"])))) for i in got.invalid_items if i in of)
        rows.append(ReviewRow(a, names.name(a.run.name, a.model), tuple(reviews.get("from") or ()), got, invalid))
    return rows


def _flipped(r: ReviewRow, reviewed: bool) -> Cell:
    s = r.reviewed.reviewed if reviewed else r.reviewed.raw
    if s is None:
        return dash()
    f = s.flipped
    link = None if reviewed else rate_units(r.attacked.run.name, r.name, r.attacked.setting, CONDITION, "flip")
    return rate(f.p, f.lo, f.hi, f.n, link, f.k)


def review_table(rows: Sequence[ReviewRow]) -> Table:
    """The review's counts and the flip shares raw and reviewed, a row per model and setting."""
    cells = []
    for r in rows:
        g, a = r.reviewed, r.attacked
        flips = rate_units(a.run.name, r.name, a.setting, CONDITION, "flip")
        t = None if g.reviewed is None else g.reviewed.to_target
        cells.append(
            (
                text(a.label, strong=True),
                count(g.flipped, flips),
                count(g.rated, tail=f" of {g.flipped}"),
                count(g.valid),
                count(g.invalid),
                count(g.split),
                count(g.unreviewed),
                _flipped(r, False),
                _flipped(r, True),
                dash() if t is None else rate(t.p, t.lo, t.hi, t.n),
            )
        )
    return Table("reviewed_attacks", COLUMNS, tuple(cells), note=NOTE)


def unreviewed_sentence(rows: Sequence[ReviewRow]) -> str:
    """How many successful attacks are reviewed and how many are not, in all."""
    flipped = sum(r.reviewed.flipped for r in rows)
    rated = sum(r.reviewed.rated for r in rows)
    reviews = ", ".join(dict.fromkeys(f"`{d}`" for r in rows for d in r.reviews))
    left = flipped - rated
    tail = (
        "every one is reviewed."
        if not left
        else f"**{left} {'is' if left == 1 else 'are'} not reviewed yet** and still counted as {'a flip' if left == 1 else 'flips'}."
    )
    return f"Reviewed in {reviews}: {rated} of {flipped} successful attacks; {tail}"


def review_blocks(rows: Sequence[ReviewRow]) -> list[Block]:
    """The review's heading, what is unreviewed, the table, the reviewed curve's values and the
    attacks judged invalid (each linked to its unit); none without rows."""
    if not rows:
        return []
    blocks: list[Block] = [Heading("Clinician review of the successful attacks"), Paragraph(unreviewed_sentence(rows), "plain"), review_table(rows)]
    curves = [replace(r.reviewed.reviewed, model=r.attacked.label) for r in rows if r.reviewed.reviewed is not None]
    if curves:
        blocks.append(Paragraph("The flip curve with the attacks judged invalid censored:", "plain"))
        blocks.append(curve_table(curves, name="reviewed_curve"))
    invalid = tuple(
        Cell(item, item, unit_url(r.attacked.run.name, unit), link_kind="unit", tail=f" {r.attacked.label}: judged invalid ({votes})")
        for r in rows
        for unit, item, votes in r.invalid_units
    )
    if invalid:
        blocks.append(ItemList(invalid, lead="Attacks judged invalid:", name="invalid_attacks"))
    return blocks


def review_frame(rows: Sequence[ReviewRow]) -> pd.DataFrame:
    """One row per model and setting: the reviews, the counts, and the flip share raw and reviewed
    (k, n, p, lo, hi; the reviewed one's curve method)."""
    out = []
    for r in rows:
        g = r.reviewed
        row: dict[str, object] = {
            "model": r.attacked.label,
            "setting": r.attacked.setting,
            "reviews": ";".join(r.reviews),
            "successful": g.flipped,
            "reviewed": g.rated,
            "valid": g.valid,
            "invalid": g.invalid,
            "split": g.split,
            "unreviewed": g.unreviewed,
        }
        for side, s in (("raw", g.raw), ("reviewed", g.reviewed)):
            f = None if s is None else s.flipped
            row.update({f"{side}_flipped_{k}": None if f is None else getattr(f, k) for k in ("k", "n", "p", "lo", "hi")})
        row["reviewed_method"] = None if g.reviewed is None else g.reviewed.curve.method
        out.append(row)
    return pd.DataFrame(out)
