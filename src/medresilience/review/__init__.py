"""Clinician review: rubrics as data, a stratified seeded sample assigned to reviewers, a small
secure web app to rate it (FastAPI + Jinja2 server pages on 127.0.0.1), and the statistics of the
ratings (pass rates, the rubric-A composite, the worst-case rate, agreement between reviewers and
with the automatic labels); `agreement/`: how far a run's LLM judge agrees with human labels
(`medres judge-agreement`); exchange.py: ratings as CSV out and in; harm.py: MedMisBench's
analyses of a response review; parts.py and picks.py: the statistics of a rubric rated paragraph
by paragraph (CancerCare) and of one where raters pick the true one of two (the realism check).

    medres review sample --rubric A --suite SUITE --n 100 --dual 0.7 --reviewers alice,bob --out REVIEW
    medres review add-reviewer REVIEW alice      # prints a one-time password
    medres review serve REVIEW                   # http://127.0.0.1:8765
    medres review stats REVIEW                   # tables, CSV, Parquet and an HTML page
    medres review harm REVIEW --items REVIEW_A   # worst-case rules, outcome classes, bands, mixed model
    medres review export REVIEW --out r.csv      # ratings out (and `review import` in)

The web app is app.py (create_app, the security headers, serving), web.py (the state and the
dependencies its routes share), routes/ (one router per area) and pages.py with templates/ (the
Jinja2 pages and stylesheet, package data). The package imports the core (errors, records, store,
stats, the family registry) and the report's HTML primitives, never the CLI.

May import: family, records, registry, report, runtime, scoring, stats, store, suite."""

from __future__ import annotations

from .db import ReviewDB, ReviewError
from .rubrics import ReviewRubric, get_rubric, rubrics
from .sample import sample_review

__all__ = ["ReviewDB", "ReviewError", "ReviewRubric", "get_rubric", "rubrics", "sample_review"]
