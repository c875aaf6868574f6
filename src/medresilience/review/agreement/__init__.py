"""How far an LLM judge agrees with human labels: a run's judge verdicts (its store) joined with
human scores of the same answers, for any judge rubric whose verdicts have numeric values.

    from medresilience.review.agreement import judge_agreement

    res = judge_agreement("runs/cm", "labels.csv")          # or a review directory / its export
    res.exact.fmt(), res.binary.fmt(), res.cohen_kappa.fmt()
    res.save("runs/cm/judge_agreement.json")

Human labels come from
- a CSV or Parquet file with one row per judged answer: `unit_id` (the run's unit id) or `item_id`
  (then `model`, and where the run has several, `setting`, `condition` or `probe_id` pick the
  unit), and one label column (`label`, `score`, `human`) or several annotator columns (`label_1`,
  `label_2`, ..., `annotator_a`, `rater2`, ...; or name them). A column `annotator` (or `reviewer`,
  `rater`) makes it a long file: one row per annotator and answer. A label is a number on the
  judge's scale or one of the rubric's verdict labels; blank (or NA) is no label;
- the clinician review app: a review directory whose rubric rates model responses (rubric
  `premise-answer` for the presupposition judge's -1/0/1), or its `medres review stats` export
  (ratings.csv / ratings.parquet): rated tasks only, one annotator per reviewer.

Several annotators of one answer are combined as the Cancer-Myth study did (appendix C.1.1): the
mean, rounded to the nearest point of the scale, a half going up (`combine="half_up"`; "half_down"
rounds a half down).

What is reported: n matched, exact agreement on the scale and on the binary view (a verdict
counts as positive when its value is in `positive`, default the top of the scale: "fully
corrects" vs not), each with a Wilson interval; Cohen's kappa (unweighted unless `kappa_weights`)
and Gwet's AC2 with ordinal weights, with bootstrap intervals over answers (stats.agreement); the
confusion matrix (human rows, judge columns); the judge's accuracy per human value; agreement
between annotators when there are several; and what was left out: labels that match no judged
answer, judged answers without a label, and labelled answers whose verdict is unscored (a judge
reply without a verdict) or missing (the answer or judge call failed) — excluded and counted,
never a default value. Every bad label row is an InputError naming the file, the line and the
column; an ambiguous match (one label, several judged answers) names the line and what to add.

The package: judged.py (a run's judged answers, from its store), labels.py (human labels from
files or the review app), measure.py (combining annotators, the pairs and their agreement). It
imports the spine (stats, store, fileio, family's study references, the judge's rubric) and the
review database; the Cancer-Myth reference values are the family's (`Family.review.study_references`).
"""

from __future__ import annotations

from .judged import JudgedUnit, RunJudgements, judged_units, rubric_name
from .labels import HumanLabel, HumanLabels, read_labels
from .measure import COMBINE, RESULT_FILE, AgreementResult, PairAgreement, combine, judge_agreement, pair_agreement

__all__ = [
    "COMBINE",
    "RESULT_FILE",
    "AgreementResult",
    "HumanLabel",
    "HumanLabels",
    "JudgedUnit",
    "PairAgreement",
    "RunJudgements",
    "combine",
    "judge_agreement",
    "judged_units",
    "pair_agreement",
    "read_labels",
    "rubric_name",
]
