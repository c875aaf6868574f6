"""The report's rates link to the units behind them in the evidence viewer
(`/units?run=<index>&model=..&setting=..&condition=..&outcome=..&<facet>=..`), from real runs of
the three families against the stub server. Each link is checked against the run's units as
`medres export` writes them: the filters of an accuracy link select exactly the units its n
counts (the answered ones), a flip link's filters the stressed units the rate's k counts; two
runs sharing a model label are told apart by the run index and the real label, a hostile model
label stays inert text in the href, and `--viewer-url none` leaves no link and no viewer line."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, make_tiny_suite, oracle_policy
from medresilience import EvalOptions, build_report, evaluate
from medresilience.cli import app
from medresilience.export import export_run
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.testing import FakeGenerator
from medresilience.models.spec import parse_model_spec
from medresilience.suite import Suite
from test_export import presupposition_policy, presupposition_suite

HOSTILE = 'm"><svg/onload=alert(1)>&x [y]'
# a rate ('71.2%') or a mean score ('+0.12') linked, with its n
# a linked number and the n in its own cell's small print (never read past its cell or another link)
LINK = re.compile(r'<a class="units" href="([^"]*)"[^>]*>([+-]?[0-9.]+)%?</a>(?:<br>)?\s*(?:<span class="n">(?:(?!</td>|<a ).)*?n=(\d+)</span>)?')
RUNS = ("mis", "presup", "noise", "mis2")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("links")
    make_tiny_suite(n_copies=2).save(root / "mis-suite")
    mis = Suite.load(root / "mis-suite")
    srv = stub_server(policy=oracle_policy)
    specs = [parse_model_spec(f"openai:a,label=m-a,base_url={srv.base_url}"), parse_model_spec(f"openai:h,label={HOSTILE},base_url={srv.base_url}")]
    evaluate(mis, specs, root / "mis", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
    evaluate(mis, specs[:1], root / "mis2", EvalOptions(limit=4))
    presup = presupposition_suite(root / "presup-suite")
    srv = stub_server(policy=presupposition_policy)
    spec = parse_model_spec(f"openai:m,label=m,base_url={srv.base_url}")
    evaluate(presup, [spec], root / "presup", EvalOptions(scoring="judge", family={"judge": f"openai:judge,base_url={srv.base_url}"}))
    srv = stub_server(policy=FakeGenerator())
    res = build_noise(
        FIXTURES / "noise_items.jsonl",
        root / "noise-suite",
        parse_model_spec(f"openai:gen,base_url={srv.base_url}"),
        NoiseBuildOptions(seed=1, variants=("redherring-10", "rewrite")),
    )
    srv = stub_server(policy="first")
    evaluate(Suite.load(res.out), [parse_model_spec(f"openai:m,label=m,base_url={srv.base_url}")], root / "noise", EvalOptions())
    rows = {}
    for i, name in enumerate(RUNS):
        export_run(root / name, "jsonl", root / f"{name}.jsonl")
        rows[i] = [json.loads(x) for x in (root / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
    return root, rows


def links(page: str) -> list[tuple[dict[str, str], float, int | None]]:
    """(filters, the rate in %, n) of every linked rate of the page."""
    out = []
    for href, pct, n in LINK.findall(page):
        url = html.unescape(href)
        assert url.startswith("http://127.0.0.1:8766/units?")
        out.append((dict(parse_qsl(urlsplit(url).query)), float(pct), int(n) if n else None))
    return out


FILTERS = ("run", "model", "setting", "condition", "outcome", "state", "score", "scope")


def matching(rows: dict[int, list[dict]], f: dict[str, str]) -> list[dict]:
    """The exported units a link's filters keep (all but its outcome): its model (none: every
    model), its conditions (any of them), its states, a valid score's value, its facets on the unit
    (or, with scope=item, on some unit of its item)."""
    facets = {k: v for k, v in f.items() if k not in FILTERS}
    run = rows[int(f["run"])]
    items = {r["item_id"] for r in run if all(str(r.get(k)) == v for k, v in facets.items())}
    return [
        r
        for r in run
        if f.get("model", r["model"]) == r["model"]  # no model: every model of the run (a mean across models)
        and f.get("setting", r["setting"]) == r["setting"]  # no setting: every setting of the run
        and r["condition"] in f.get("condition", r["condition"]).split(",")  # any of several conditions
        and ("state" not in f or r["status"] in f["state"].split(","))
        and ("score" not in f or (r["status"] == "valid" and f"{r['value']:g}" == f["score"]))
        and (r["item_id"] in items if f.get("scope") == "item" else all(str(r.get(k)) == v for k, v in facets.items()))
    ]


def flips(rows: list[dict], stressed: list[dict], target: bool, read: bool = False) -> int:
    """Stressed units wrong (unread counts as wrong, unless `read`: read replies only) whose clean
    unit of the same item was right (and, for flips to the target, answered with the probe's target)."""
    clean = {(r["model"], r["setting"], r["item_id"], r["epoch"]): r for r in rows if r["condition"] == "clean"}
    n = 0
    for r in stressed:
        c = clean.get((r["model"], r["setting"], r["item_id"], r["epoch"]))
        if c is None or c["value"] != 1 or r["status"] == "error" or r["value"] == 1 or (read and r["status"] != "valid"):
            continue
        n += (r["label"] == r["target"]) if target else 1
    return n


@pytest.fixture(scope="module")
def page(runs):
    root, _ = runs
    return build_report([root / n for n in RUNS], out_dir=root / "report").html.read_text(encoding="utf-8")


def test_every_rate_links_to_the_units_it_counts(runs, page):
    _, rows = runs
    found = links(page)
    assert {int(f["run"]) for f, _, _ in found} == {0, 1, 2, 3}
    checked = flipped = 0
    kinds: set[str] = set()
    facets: set[str] = set()
    for f, pct, n in found:
        if "reason" in f:  # an unscored reason's count: checked against the viewer in test_report_counts.py
            continue
        units = matching(rows, f)
        assert units or pct == 0, f  # every link names units of its run (a share of 0 none)
        if f.get("outcome") is None and "score" not in f and n is not None:
            answered = [u for u in units if u["status"] not in ("error", "missing", "unscored")]  # what a rate counts
            assert n == len(answered) or n == len({u["item_id"] for u in answered}), f
            checked += 1
        elif f.get("outcome") in ("flip", "flip_read", "flip_to_target") and n is not None and int(f["run"]) in (0, 3):
            k = flips(rows[int(f["run"])], units, f["outcome"] == "flip_to_target", f["outcome"] == "flip_read")
            # a resilience (1 - ASR, in the profiles) links to the flips it counts out
            assert k in (round(pct * n / 100), n - round(pct * n / 100)), f
            flipped += 1
            kinds.add(f["outcome"])
        facets.update(k for k in f if k not in FILTERS)
    assert checked > 10 and flipped > 4
    # the rates of read replies link to flips of read replies; strata link by their facet or source
    assert kinds == {"flip", "flip_read", "flip_to_target"}
    assert {"source", "category", "generator", "content_type"} <= facets, facets


def test_shared_and_hostile_model_labels(runs, page):
    found = links(page)
    models = {(f["run"], f["model"]) for f, _, _ in found if "model" in f}  # a mean across models names none
    assert ("0", "m-a") in models and ("3", "m-a") in models  # shown as "m-a [mis2]", linked by its own label
    assert ("0", HOSTILE) in models  # the label comes back whole from the href
    assert "<svg/onload" not in page  # and nowhere raw in the page
    line = re.search(r"start the viewer with <code>(.*?)</code>", page).group(1)
    assert html.unescape(line).startswith("medres view ") and all(n in line for n in RUNS)


def test_viewer_url_option(runs, tmp_path):
    root, _ = runs
    res = CliRunner().invoke(app, ["report", str(root / "noise"), "--out", str(tmp_path / "off"), "--viewer-url", "none"])
    assert res.exit_code == 0, res.output
    off = (tmp_path / "off" / "report.html").read_text(encoding="utf-8")
    assert 'class="units"' not in off and "medres view" not in off
    res = CliRunner().invoke(app, ["report", str(root / "noise"), "--out", str(tmp_path / "on"), "--viewer-url", "http://127.0.0.1:9000"])
    assert res.exit_code == 0, res.output
    on = (tmp_path / "on" / "report.html").read_text(encoding="utf-8")
    hrefs = re.findall(r'<a class="units" href="([^"]*)"', on)
    assert hrefs and all(h.startswith("http://127.0.0.1:9000/units?run=0&amp;model=m&amp;setting=none&amp;") for h in hrefs)
    assert "--port 9000" in on
    res = CliRunner().invoke(app, ["report", str(root / "noise"), "--out", str(tmp_path / "bad"), "--viewer-url", "127.0.0.1:8766/units"])
    assert res.exit_code == 2 and "--viewer-url" in res.output and not (tmp_path / "bad").exists()
