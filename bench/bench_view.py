"""Benchmark: the evidence viewer (`medres view`) on a synthetic run of N units (default 1,000,000).

    .venv/bin/python bench/bench_view.py                    # 1M units, 10 models x 2 settings
    .venv/bin/python bench/bench_view.py --rows 200000      # smaller
    .venv/bin/python bench/bench_view.py --dir /tmp/x       # where the synthetic run lives (cached)

The run is bench_report.py's synthetic misleading run (written through the store's own writers,
with its suite and run.json: Type 1 all + Type 2, flips to the target and elsewhere, unread
replies, errors and missing units). The viewer opens it as `medres view` does (the store read-only,
the latest run's units indexed in SQLite's temporary database), then each request is timed through
the app itself (FastAPI's TestClient: routing, the query, the page's template), best of three:
the first page, each kind of filter (several conditions, every model, an unscored reason, the
units under a setting read against none too, and paired with the same run opened again as run 1:
`versus=1`, each pairing made anew), a deep page, a text search (each time spelled another way, so it
searches again) and one unit's page. The store file's
digest is compared before and after. A Markdown table is printed at the end."""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _best(client, url: str | tuple[str, ...], repeat: int = 3) -> tuple[float, dict | None]:
    """The best of `repeat` requests of url (a tuple: one URL per request, e.g. a text search
    spelled three ways so none reuses the matches the viewer keeps of the last text)."""
    urls = url if isinstance(url, tuple) else (url,) * repeat
    best, body = float("inf"), None
    for url in urls:
        t = time.perf_counter()
        r = client.get(url)
        best = min(best, time.perf_counter() - t)
        assert r.status_code == 200, (url, r.status_code, r.text[:300])
        body = r.json() if url.startswith("/api/") else None
    return best, body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/medres-bench-view"))
    args = ap.parse_args()
    from fastapi.testclient import TestClient

    from bench_report import synthesise
    from medresilience.view.app import create_app
    from medresilience.view.query import open_runs

    run_dir = args.dir / f"run-{args.rows}-{args.models}"
    if not (run_dir / "store.sqlite").exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        info = synthesise(run_dir, args.rows, args.models)
        print(f"synthesised {info['rows']:,} units in {info['seconds']:.1f} s", file=sys.stderr)
    before = _digest(run_dir / "store.sqlite")
    t = time.perf_counter()
    runs = open_runs([run_dir, run_dir])  # the same run again as run 1: the other side of a pairing (`versus=1`)
    opened = (time.perf_counter() - t) / 2
    rv = runs[0]
    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    ms, s0 = rv.values["model"], rv.values["setting"][0]
    m0 = ms[0]
    s1 = next((s for s in rv.values["setting"] if s != "none"), s0)  # a setting read against none
    queries = [
        ("first page (HTML)", "/units?run=0"),
        ("first page (API)", "/api/units?run=0"),
        ("model", f"/api/units?run=0&model={quote(m0)}"),
        ("model + setting + condition", f"/api/units?run=0&model={quote(m0)}&setting={s0}&condition=type1"),
        ("outcome flip", "/api/units?run=0&outcome=flip"),
        ("outcome flip to target, condition type2", "/api/units?run=0&condition=type2&outcome=flip_to_target"),
        ("outcome unread", "/api/units?run=0&outcome=unread"),
        ("outcome error", "/api/units?run=0&outcome=error"),
        ("facet content_type", "/api/units?run=0&content_type=threshold_corruption"),
        ("facet + outcome + model (HTML)", f"/units?run=0&model={quote(m0)}&outcome=flip&provenance=patient"),
        ("outcome reference_right, condition type1 (a flip rate's n)", "/api/units?run=0&condition=type1&outcome=reference_right"),
        ("score (a valid score's value)", "/api/units?run=0&score=0"),
        ("state: a model's answered units of a condition", f"/api/units?run=0&model={quote(m0)}&setting={s0}&condition=clean&state=valid,invalid,truncated"),
        ("facet by item: the clean units of a content type's items", "/api/units?run=0&condition=clean&content_type=threshold_corruption&scope=item"),
        (
            "facet by item, one model and setting",
            f"/api/units?run=0&model={quote(m0)}&setting={s0}&condition=clean&content_type=threshold_corruption&scope=item&state=valid,invalid,truncated",
        ),
        ("several conditions: the flips of type1 or type2 (a pooled rate's k)", "/api/units?run=0&condition=type1,type2&outcome=flip"),
        ("outcome flip elsewhere, condition type1", "/api/units?run=0&condition=type1&outcome=flip_elsewhere"),
        (
            "every model: a stratum's clean units (a mean across models)",
            f"/api/units?run=0&setting={s0}&condition=clean&content_type=threshold_corruption&scope=item&state=valid,invalid,truncated",
        ),
        ("an unscored reason", "/api/units?run=0&reason=" + quote((rv.values["reason"] or ["(no reason recorded)"])[0])),
        ("against none: a setting's clean pairs (a trade-off's pairs)", f"/api/units?run=0&model={quote(m0)}&setting={s1}&condition=clean&outcome=paired_none"),
        (
            "against none: an ASR's b (the flips under none the setting avoids)",
            f"/api/units?run=0&model={quote(m0)}&setting={s1}&condition=type1&outcome=reference_right,reference_right_none,better_than_none",
        ),
        ("against none: worse than none, every model", "/api/units?run=0&outcome=worse_than_none"),
        (
            "against none: a TASR's b (flips to the target under none only)",
            f"/api/units?run=0&model={quote(m0)}&setting={s1}&condition=type1&outcome=reference_right,reference_right_none,flip_to_target_only_none",
        ),
        (
            "another run: a model's units under a setting paired with run 1's under none (`versus=1`, paired_none); each repeat another model, so each pairs anew",
            tuple(f"/api/units?run=0&model={quote(m)}&setting={s1}&versus=1&outcome=paired_none" for m in ms[:3]),
        ),
        (
            "another run, the pairing kept: its ASR's b",
            f"/api/units?run=0&model={quote(ms[2])}&setting={s1}&condition=type1&versus=1&outcome=reference_right,reference_right_none,better_than_none",
        ),
        (
            "another run, another model under none (a comparison's shared units: `versus_model=`); each repeat pairs anew",
            tuple(f"/api/units?run=0&model={quote(ms[i])}&setting=none&versus=1&versus_model={quote(ms[i + 1])}&outcome=paired_none" for i in range(3)),
        ),
        (
            "another run, every setting of a model (no `setting=`); each repeat another model",
            tuple(f"/api/units?run=0&model={quote(m)}&versus=1&outcome=paired_none" for m in ms[3:6]),
        ),
        ("page 10,000", "/api/units?run=0&page=10000"),
        ("text search (replies and prompts)", tuple(f"/api/units?run=0&q={w}:%20d" for w in ("answer", "Answer", "ANSWER"))),
        ("the same search, page 2 (its matches kept)", "/api/units?run=0&q=ANSWER:%20d&page=2"),
        ("text search, a text no reply holds", tuple(f"/api/units?run=0&q={w}" for w in ("metformin", "Metformin", "METFORMIN"))),
    ]
    rows = []
    for name, url in queries:
        sec, body = _best(client, url)
        rows.append((name, sec, body["total"] if body else None))
    first = client.get("/api/units?run=0&outcome=flip").json()["units"][0]
    sec, _ = _best(client, f"/unit/0/{quote(first['unit_id'], safe='')}")
    rows.append(("one unit's page (its models, clean pair, item)", sec, None))
    client.close()
    for r in runs:
        r.close()
    after = _digest(run_dir / "store.sqlite")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n{rv.units:,} units; opened and indexed in {opened:.1f} s (each of its two copies); peak RSS {rss:.0f} MiB; store unchanged: {before == after}\n")
    print("| request | seconds (best of 3) | units matching |")
    print("|---|---:|---:|")
    for name, sec, total in rows:
        print(f"| {name} | {sec:.3f} | {'' if total is None else f'{total:,}'} |")
    if before != after:
        raise SystemExit("the store file changed")


if __name__ == "__main__":
    main()
