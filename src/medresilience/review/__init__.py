"""Clinician review: rubrics as data, a stratified seeded sample assigned to reviewers, a small
secure web app to rate it (FastAPI + Jinja2 server pages on 127.0.0.1), and the statistics of the
ratings (pass rates, the rubric-A composite, the worst-case rate, agreement between reviewers and
with the automatic labels); `agreement/`: how far a run's LLM judge agrees with human labels
(`medres judge-agreement`).

    medres review sample --rubric A --suite SUITE --n 100 --dual 0.7 --reviewers alice,bob --out REVIEW
    medres review add-reviewer REVIEW alice      # prints a one-time password
    medres review serve REVIEW                   # http://127.0.0.1:8765
    medres review stats REVIEW                   # tables, CSV, Parquet and an HTML page
"""

from __future__ import annotations

from .db import ReviewDB, ReviewError
from .rubrics import Rubric, get_rubric, rubrics
from .sample import sample_review

__all__ = ["ReviewDB", "ReviewError", "Rubric", "get_rubric", "rubrics", "sample_review"]
