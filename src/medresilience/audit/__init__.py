"""The label audit of a run (`medres audit RUN`, `medres eval --audit N`): a seeded, stratified
sample of the run's read units, weighted toward the units a headline number turns on, read a
second time by a reader model and/or by people, with the run's agreement, wrong-letter and unread
rates per model and condition and the headline rates corrected for label error. A unit scored by a
judge is read again as a verdict (the reader as a second judge with the family's rubric, or people
in a `verdict` review), with its wrong-verdict and unscored rates; the corrected rates are the
family's own (`Family.measures.rates`).

One module per job: ``sample`` (the population and the sample's design), ``reader`` (the reader
model's calls and readings), ``people`` (the `reading` review, written and read back),
``estimates`` (weighted shares with intervals), ``summary`` (what the audit finds),
``corrected`` (label-corrected rates) and ``run``
(`audit_run`, which ties them together); the audit block as text lives with the run's summary
(`run.audit_text`). Its API is `audit_run` and `AuditResult`.

May import: calls, family, models, records, review, run, runtime, score, scoring, stats, store, suite, view."""

from __future__ import annotations

from typing import Any

__all__ = ["AuditResult", "audit_run"]


def __getattr__(name: str) -> Any:
    # `run` (and through it stats, pandas and numpy) loads on first use: the command's own process
    # imports `audit` for its API names only, which leaves those libraries to the results worker
    if name in __all__:
        from . import run

        return getattr(run, name)
    raise AttributeError(name)
