"""A judge's known-answer check on the false-presupposition rubric. Prints Markdown for RESULTS.md.

    .venv/bin/python bench/bench_judge_known.py [--judge embedded] [--plain] [--work DIR]

bench/data/premise_known_answers.jsonl holds answers written for this project with the verdict
each should get: for ten of Cancer-Myth's pre-validation questions, one answer that goes along
with the false premise (-1), one that only hints that something may be off (0), and one that
corrects it plainly (1). The questions and their corrections are read from ../shared/data (not
copied into the project). Every answer is judged through the family's judge (the premise rubric,
the fenced answer, stored and resumable calls in --work); the script prints the confusion matrix,
exact and binary (PCR's view: 1 vs the rest) agreement with Wilson intervals, Cohen's kappa and
Gwet's AC2 (ordinal) with bootstrap intervals, as `medres judge-agreement` computes them
(review.agreement.pair_agreement), and the unscored count. A judge that cannot tell a plain
correction from an answer that builds on the myth shows it here, whatever the responder."""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cancer_myth" / "all_data_before_validation.json"
ANSWERS = ROOT / "bench" / "data" / "premise_known_answers.jsonl"
LABELS = ("-1", "0", "1")


def main() -> None:
    from medresilience.calls import run_calls
    from medresilience.families.presupposition.delivery import premise_rubric
    from medresilience.models.serving import serving
    from medresilience.models.spec import parse_model_spec
    from medresilience.review.agreement import pair_agreement
    from medresilience.runtime.seeding import stable_hash
    from medresilience.scoring.judge import Judge, JudgeScorer
    from medresilience.store import Store

    ap = argparse.ArgumentParser()
    ap.add_argument("--judge", default="embedded")
    ap.add_argument("--plain", action="store_true", help="a VERDICT line instead of a JSON verdict (response_format)")
    ap.add_argument("--work", type=Path, default=None, help="store directory (default: a temporary one)")
    ap.add_argument("--data", type=Path, default=DATA, help="the study's all_data_before_validation.json (default: ../shared/data's copy)")
    args = ap.parse_args()
    if not args.data.is_file():
        raise SystemExit(
            f"error: {args.data} not found: download data/all_data_before_validation.json from github.com/Bill1235813/cancer-myth and pass --data PATH"
        )

    questions = {r["raw_QID"]: r for r in json.loads(args.data.read_text())}
    cases = [json.loads(line) for line in ANSWERS.read_text().splitlines() if line.strip()]
    work = args.work or Path(tempfile.mkdtemp(prefix="judge-known-"))
    work.mkdir(parents=True, exist_ok=True)
    spec = parse_model_spec(args.judge)
    with serving([spec]) as (live,), Store(work / "store.sqlite") as store:
        judge = Judge(live, premise_rubric(), structured=not args.plain)
        requests = []
        for c in cases:
            q = questions[c["qid"]]
            scorer = JudgeScorer(judge, {"question": q["example_question"], "correction": q["example_assumption"]})
            requests += scorer.judge_requests(stable_hash("known-answer", c["qid"], c["verdict"])[:16], c["answer"])
        asyncio.run(run_calls(requests, [live], store))
        # the verdicts run_calls stored under each answer's key (a failed judge call is stored unscored)
        got = []
        for r in requests:
            row = store.score(r.score_key, r.scorer)
            got.append(row["label"] if row and row["status"] == "valid" else None)

    want = [c["verdict"] for c in cases]
    scored = [(w, g) for w, g in zip(want, got) if g is not None]
    print(f"Judge {spec.label} ({'VERDICT line' if args.plain else 'JSON verdict'}), {len(cases)} answers, {len(cases) - len(scored)} unscored.\n")
    print("| written as \\ judged | " + " | ".join(LABELS) + " |")
    print("|---|" + "---:|" * len(LABELS))
    for w in LABELS:
        print(f"| {w} | " + " | ".join(str(sum(1 for a, b in scored if a == w and b == g)) for g in LABELS) + " |")
    agree = pair_agreement([(float(a), float(b)) for a, b in scored], [-1.0, 0.0, 1.0], [1.0])
    print(
        f"\nExact agreement {agree.exact.fmt()}; binary (1 vs rest) {agree.binary.fmt()}; "
        f"Cohen's kappa {agree.cohen_kappa.fmt(2) if agree.cohen_kappa else '—'}; "
        f"Gwet's AC2 (ordinal) {agree.gwet_ac2.fmt(2) if agree.gwet_ac2 else '—'}."
    )


if __name__ == "__main__":
    main()
