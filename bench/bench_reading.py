"""How the answer and verdict readers read the real replies of tests/data/replies, by split and by
style: read right, read wrong (a letter or verdict other than a careful reader's), left unread
although a careful reader can read it, and right to leave unread.

    .venv/bin/python bench/bench_reading.py            # Markdown tables on stdout
    .venv/bin/python bench/bench_reading.py --misses   # also list every miss with its reason
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from medresilience.scoring.letters import read_answer
from medresilience.scoring.verdicts import read_verdict

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "replies"


def _styles(r: dict) -> list[str]:
    s = r["style"]
    return [x.strip() for x in (s if isinstance(s, list) else s.split(",")) if x.strip()]


def _outcome(got: str | None, expected: str | None) -> str:
    if got is None:
        return "unread" if expected is not None else "right_none"
    return "right" if got == expected else "wrong"


def _table(title: str, rows: dict[str, dict[str, int]]) -> str:
    out = [f"### {title}", "", "| | n | read right | read wrong | unread (readable) | unread share of readable |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, c in rows.items():
        n = sum(c.values())
        readable = n - c["right_none"]
        share = f"{100 * c['unread'] / readable:.1f}%" if readable else "-"
        out.append(f"| {key} | {n} | {c['right'] + c['right_none']} | {c['wrong']} | {c['unread']} | {share} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--misses", action="store_true", help="list every reply read wrong or left unread")
    args = ap.parse_args()
    mcq = [json.loads(x) for p in sorted(DATA.glob("mcq_*.jsonl")) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    judge = [json.loads(x) for p in sorted(DATA.glob("judge*.jsonl")) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    misses = []
    for kind, records, read in (
        ("answers", mcq, lambda r: read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))),
        ("verdicts", judge, lambda r: read_verdict(r["reply"], r["labels"], answer=r.get("answer_under_review"))),
    ):
        by_split: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        by_style: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for r in records:
            got = read(r)
            o = _outcome(got.label, r["expected"])
            for key in (r["split"], "all"):
                by_split[key][o] += 1
            for s in _styles(r):
                by_style[s][o] += 1
            if o in ("wrong", "unread"):
                misses.append(f"{r['id']} ({kind}, {r['split']}): {o}, read {got.label!r} ({got.how}); expected {r['expected']!r}: {r['why'][:160]}")
        order = [
            s
            for s in (
                "dev",
                "heldout",
                "validation",
                "validation2",
                "validation3",
                "validation4",
                "validation5",
                "validation6",
                "validation7",
                "validation8",
                "validation9",
                "validation10",
                "validation11",
                "validation12",
                "all",
            )
            if s in by_split
        ]
        print(_table(f"{kind}: by split", {s: by_split[s] for s in order}), end="\n\n")
        print(_table(f"{kind}: by style", dict(sorted(by_style.items(), key=lambda kv: -sum(kv[1].values())))), end="\n\n")
    if args.misses:
        print("\n".join(misses))


if __name__ == "__main__":
    main()
