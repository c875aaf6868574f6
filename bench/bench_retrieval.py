"""Benchmark: the corpus index of the retrieval setting (build and query speed on a 100,000-passage
corpus) and what the setting adds per item to an evaluation against `none`.

    .venv/bin/python bench/bench_retrieval.py [--passages 100000] [--queries 1000] [--repeat 3]

The corpus is synthetic, generated deterministically here (random.Random(0)): a vocabulary of the
word tokens of the bundled sample suite (its questions, options and misleading contexts, so the
sample's real prompts hit real posting lists) spread among 30,000 pseudo-words (syllable
strings), drawn with Zipf weights (1 / (rank + 10)); each passage has 80-160 words and a
3-word title. Written as JSON lines (not timed), then:

- build: `medres corpus index` (corpus.build_index: read and check the JSON lines, chunk, hash,
  insert, FTS5 rebuild + optimize, VACUUM) against a bare build in the same run (the same rows,
  already in memory, inserted into a plain FTS5 table with the same tokenizer, nothing else);
- queries: the 240 rendered prompts of the sample suite (clean and every probe) and synthetic
  25-word questions, `--queries` in all, each through `CorpusIndex.search(text, k=3)` (terms,
  escaping, bm25 ranking, passage rows), at the default 32 query terms and at 16, against bare
  FTS5 queries on the same index file with the same MATCH expressions prepared beforehand
  (`SELECT rowid ... ORDER BY bm25(passages_fts) LIMIT 3`, and the same with `ORDER BY rank`);
- per item: `evaluate` of the sample suite (48 items, 240 units a setting) against the stub
  server in its own process (policy hash), `none` alone then `retrieval:INDEX,k=3` alone, each in
  a fresh run directory with a fresh setting (no cached query), best of `--repeat`; and `plan`
  alone (no calls) for each, which isolates what retrieval adds to preparing the requests.
Prints Markdown tables."""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

SYLLABLES = ["ka", "ri", "mo", "te", "lu", "sa", "ne", "po", "di", "va", "go", "shi", "ber", "tor", "lin", "qua", "zem", "phy", "cro", "dal"]


def vocabulary(n_pseudo: int = 30_000) -> list[str]:
    """Sample-suite words spread among pseudo-words, in Zipf rank order (deterministic)."""
    from medresilience.run.bundled_suite import sample_suite

    suite = sample_suite()
    texts = [t for it in suite.items.values() for t in (it.question, *(it.options or {}).values())]
    texts += [json.dumps(p.model_dump(mode="json")) for p in suite.probes]
    real = sorted({w for t in texts for w in re.findall(r"[a-z]{3,}", t.lower())})
    rng = random.Random(0)
    pseudo: list[str] = []
    seen = set(real)
    while len(pseudo) < n_pseudo:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            pseudo.append(w)
    words = list(pseudo)
    for i, w in enumerate(real):  # real words at ranks spread from 20 to ~20,000
        words.insert(min(len(words), 20 + i * (20_000 // max(1, len(real)))), w)
    return words


def synthesise(path: Path, passages: int) -> list[tuple[str, str, str]]:
    words = vocabulary()
    cum, total = [], 0.0
    for r in range(len(words)):
        total += 1.0 / (r + 10)
        cum.append(total)
    rng = random.Random(0)
    rows = []
    with path.open("w", encoding="utf-8") as fh:
        for i in range(passages):
            n = rng.randint(80, 160)
            toks = rng.choices(words, cum_weights=cum, k=n + 3)
            row = (f"syn-{i:06d}", " ".join(toks[:3]).capitalize(), " ".join(toks[3:]))
            rows.append(row)
            fh.write(json.dumps({"id": row[0], "title": row[1], "text": row[2]}) + "\n")
    return rows


def queries(n: int) -> list[str]:
    from medresilience.family import family_of
    from medresilience.run.bundled_suite import sample_suite

    suite = sample_suite()
    fam = family_of([suite.manifest.family])
    fopts = fam.parse_options({})
    prompts = []
    for it in suite.items.values():
        prompts.append(fam.evaluation.render(it, None, "letter", fopts)[-1]["content"])
        prompts += [fam.evaluation.render(it, p, "letter", fopts)[-1]["content"] for p in suite.probes if p.item_id == it.id]
    words = vocabulary()
    rng = random.Random(1)
    while len(prompts) < n:
        prompts.append(" ".join(rng.choice(words[:5000]) for _ in range(25)) + "?")
    return prompts[:n]


def bench_build(jsonl: Path, rows: list[tuple[str, str, str]], work: Path) -> dict:
    from medresilience.corpus import TOKENIZER, build_index

    out = work / "corpus.sqlite"
    t = time.perf_counter()
    m = build_index(jsonl, out)
    ours = time.perf_counter() - t
    bare_path = work / "bare.sqlite"
    t = time.perf_counter()
    conn = sqlite3.connect(bare_path)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(f"CREATE VIRTUAL TABLE fts USING fts5(title, text, tokenize='{TOKENIZER}')")
    conn.executemany("INSERT INTO fts(title, text) VALUES (?, ?)", ((r[1], r[2]) for r in rows))
    conn.commit()
    conn.close()
    bare = time.perf_counter() - t
    return {"out": out, "manifest": m, "ours": ours, "bare": bare, "size": out.stat().st_size, "bare_size": bare_path.stat().st_size}


def bench_queries(index_path: Path, texts: list[str], repeat: int, terms: int) -> dict:
    """Best of `repeat` passes: CorpusIndex.search and two bare FTS5 queries with the same MATCH
    expressions (prepared beforehand), each over every text."""
    from medresilience.corpus import CorpusIndex, match_expression

    exprs = [e for e in (match_expression(t, terms) for t in texts) if e is not None]
    bare_sql = {
        "bm25": "SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? ORDER BY bm25(passages_fts) LIMIT 3",
        "rank": "SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT 3",
    }
    best = {"ours": float("inf"), **{k: float("inf") for k in bare_sql}}
    lat: list[float] = []
    for _ in range(repeat):
        with CorpusIndex(index_path) as idx:
            lat_run = []
            t0 = time.perf_counter()
            for t in texts:
                s = time.perf_counter()
                idx.search(t, 3, max_terms=terms)
                lat_run.append(time.perf_counter() - s)
            ours = time.perf_counter() - t0
        if ours < best["ours"]:
            best["ours"], lat = ours, lat_run
        conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
        for name, sql in bare_sql.items():
            t0 = time.perf_counter()
            for e in exprs:
                conn.execute(sql, (e,)).fetchall()
            best[name] = min(best[name], time.perf_counter() - t0)
        conn.close()
    lat.sort()
    return {**best, "n": len(texts), "p50": statistics.median(lat), "p95": lat[int(0.95 * (len(lat) - 1))]}


def bench_evaluate(index_path: Path, work: Path, repeat: int) -> dict:
    from medresilience.mitigations.registry import forget_made
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.bundled_suite import sample_suite
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions, plan
    from medresilience.testing.stub import StubProcess

    suite = sample_suite()
    name = f"retrieval:{index_path},k=3"
    out: dict = {"items": len(suite.items)}
    best: dict[str, dict] = {}
    with StubProcess(policy="hash") as stub:
        spec = parse_model_spec(f"openai:stub,base_url={stub.base_url},concurrency=64")
        evaluate(suite, [spec], work / "warm-up", EvalOptions(settings=("none",)))  # imports, connections, first-call costs
        for r in range(repeat):  # alternating none / retrieval, best of each
            for label, setting in (("none", "none"), ("retrieval", name)):
                b = best.setdefault(label, {"eval": float("inf"), "plan": float("inf")})
                forget_made()  # a fresh setting: its query cache starts empty
                t = time.perf_counter()
                b["units"] = len(plan(suite, [spec], EvalOptions(settings=(setting,))))
                b["plan"] = min(b["plan"], time.perf_counter() - t)
                forget_made()
                t = time.perf_counter()
                res = evaluate(suite, [spec], work / f"run-{label}-{r}", EvalOptions(settings=(setting,)))
                b["eval"] = min(b["eval"], time.perf_counter() - t)
                assert res.stats.called == b["units"], (res.stats.called, b["units"])
    return {**out, **best}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        jsonl = work / "synthetic.jsonl"
        rows = synthesise(jsonl, args.passages)
        b = bench_build(jsonl, rows, work)
        del rows
        m = b["manifest"]
        print(f"synthetic corpus: {args.passages:,} passages, {m['counts']['words']:,} words, {jsonl.stat().st_size / 2**20:.0f} MiB of JSON lines\n")
        print("| build | wall (s) | passages/s | file (MiB) |\n|---|---:|---:|---:|")
        print(f"| bare FTS5 insert (rows in memory) | {b['bare']:.1f} | {args.passages / b['bare']:,.0f} | {b['bare_size'] / 2**20:.0f} |")
        print(f"| medres corpus index | {b['ours']:.1f} | {m['counts']['passages'] / b['ours']:,.0f} | {b['size'] / 2**20:.0f} |\n")
        texts = queries(args.queries)
        print("| queries (k=3) | terms | n | wall (s) | queries/s | p50 (ms) | p95 (ms) |\n|---|---:|---:|---:|---:|---:|---:|")
        for terms in (32, 16):
            q = bench_queries(b["out"], texts, args.repeat, terms)
            print(f"| bare FTS5: MATCH prepared, ORDER BY rank LIMIT 3 | {terms} | {q['n']} | {q['rank']:.2f} | {q['n'] / q['rank']:,.1f} | — | — |")
            print(f"| bare FTS5: MATCH prepared, ORDER BY bm25() LIMIT 3 | {terms} | {q['n']} | {q['bm25']:.2f} | {q['n'] / q['bm25']:,.1f} | — | — |")
            print(f"| CorpusIndex.search | {terms} | {q['n']} | {q['ours']:.2f} | {q['n'] / q['ours']:,.1f} | {q['p50'] * 1e3:.1f} | {q['p95'] * 1e3:.1f} |")
        print()
        e = bench_evaluate(b["out"], work, args.repeat)
        n = e["items"]
        print(f"| sample suite ({n} items), stub server | units | plan (s) | evaluate (s) | evaluate per item (ms) | plan per item (ms) |")
        print("|---|---:|---:|---:|---:|---:|")
        for label in ("none", "retrieval"):
            r = e[label]
            print(f"| {label} | {r['units']} | {r['plan']:.2f} | {r['eval']:.2f} | {r['eval'] / n * 1e3:.1f} | {r['plan'] / n * 1e3:.1f} |")
        dp, de = e["retrieval"]["plan"] - e["none"]["plan"], e["retrieval"]["eval"] - e["none"]["eval"]
        print(f"| retrieval - none | | {dp:+.2f} | {de:+.2f} | {de / n * 1e3:+.1f} | {dp / n * 1e3:+.1f} |")


if __name__ == "__main__":
    main()
