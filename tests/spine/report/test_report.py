"""Reports from real run directories: runs made against the local stub server (the stub stands in
for the models, the boundary we do not own), two models, with and without the defense.

Policies (deterministic): model A follows every [[ANSWER:X]] marker in the prompt unless the
defensive instruction is present; model B follows only the markers of question 1. So, per copy of
the tiny suite (conftest), A's Type 1 ASR without defense is 4/9 (q1: 3 flips to the target, q3:
1 flip elsewhere), B's is 3/9; with the defense A's is 0 and B's does not change."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import MARKER, make_tiny_suite, oracle_policy, stub_spec
from medresilience import stats
from medresilience.cli import app
from medresilience.families.misleading.metrics import misleading_metrics
from medresilience.mitigations import CAUTION_INSTRUCTION as DEFENSE_INSTRUCTION
from medresilience.models.spec import parse_model_spec
from medresilience.report import build_report, compare_runs
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import InputError
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

SECRET_VAR = "MEDRES_TEST_REPORT_KEY"
SECRET = "sk-test-DO-NOT-LEAK-5f1c2a9b7e"
COPIES = 10


def policy(messages, request):
    user = messages[-1]["content"]
    system = messages[0]["content"]
    if MARKER.search(user):
        follows = True
        if request.get("model") == "stub-b":
            follows = "Question number 1:" in user
        elif DEFENSE_INSTRUCTION in system:
            follows = False
        if not follows:
            user = MARKER.sub("", user)
            messages = [*messages[:-1], {"role": "user", "content": user}]
    return oracle_policy(messages, request)


def make_runs(root) -> dict[str, object]:
    """Three run directories on the same suite: base (no defense), defended, both settings.
    The API key variable (SECRET_VAR) must be set."""
    suite = make_tiny_suite(n_copies=COPIES)
    suite.save(root / "suite")

    suite = Suite.load(root / "suite")
    out = {"suite": root / "suite"}
    with StubServer(policy=policy) as srv:
        specs = [
            parse_model_spec(f"openai:stub-a,label=model-a,base_url={srv.base_url},concurrency=16,api_key_env={SECRET_VAR}"),
            parse_model_spec(f"openai:stub-b,label=model-b,base_url={srv.base_url},concurrency=16,api_key_env={SECRET_VAR},price_input=0.5,price_output=1.5"),
        ]
        for name, settings in (("base", ("none",)), ("defended", ("caution",)), ("both", ("none", "caution"))):
            evaluate(suite, specs, root / name, EvalOptions(settings=settings, family={"type1": "all"}))
            out[name] = root / name
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, SECRET)
        yield make_runs(tmp_path_factory.mktemp("report-runs"))


@pytest.fixture(scope="module")
def report(runs):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, SECRET)
        yield build_report([runs["both"]])


def _all_text(path) -> str:
    out = []
    for p in sorted(path.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            out.append(data.decode("utf-8", errors="replace"))
    return "\n".join(out)


# ------------------------------------------------------------------------------ the report


def test_report_files_and_headline_numbers(runs, report):
    res = json.loads((runs["both"] / "results.json").read_text())
    assert report.html == runs["both"] / "report" / "report.html"
    assert report.families == ["misleading"]
    html = report.html.read_text()
    a = res["models"]["model-a"]["none"]["overall"]
    # the headline numbers, with their intervals, near the top (before the first figure)
    asr = a["type1"]["asr"]
    assert (asr["k"], asr["n"]) == (4 * COPIES, 9 * COPIES)
    cell = f"{100 * asr['p']:.1f}%"
    interval = f"[{100 * asr['lo']:.1f}, {100 * asr['hi']:.1f}]"
    first_fig = html.index("<figure")
    assert cell in html[:first_fig] and interval in html[:first_fig] and f"n={asr['n']}" in html[:first_fig]
    clean = a["clean_acc"]
    assert f"{100 * clean['p']:.1f}%" in html[:first_fig]
    # key numbers come first, then the family section, then profile, settings effect, tests, facts
    order = [html.index(f'id="{s}"') for s in ("key", "misleading", "profile", "settings", "tests", "facts")]
    assert order == sorted(order)
    # families without data are not shown as sections (and not faked)
    assert 'id="presupposition"' not in html and 'id="noise"' not in html
    # markdown carries the same headline cells
    md = report.markdown.read_text()
    assert cell in md and "model-a" in md


def test_report_is_self_contained_with_readable_svgs(report):
    html = report.html.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    # links to the local evidence viewer are the only absolute URLs: anchors, never fetched
    viewer = re.findall(r'<a class="units" href="(https?:[^"]*)"', html)
    assert viewer and all(u.startswith("http://127.0.0.1:8766/units?") for u in viewer)
    fetched = re.sub(r'<a class="units" href="[^"]*"', "", html)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", fetched), "no external resources"
    assert '<link rel="stylesheet"' not in html and "@import" not in html
    assert not re.search(r"url\((?!#)", html), "only in-document url(#id) references"
    svgs = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert len(svgs) >= 6  # accuracy, by source, 2 heatmaps, flips, profile (+ defense)
    for svg in svgs:
        title = re.search(r"<title>(.+?)</title>", svg)
        assert title and title.group(1).strip(), "every figure has a title"
        assert "<text" in svg or "font" in svg  # text kept as text
    # axis labels and titles are real text in the SVG
    for label in (
        "Accuracy (%), 95% Wilson CI",
        "Model",
        "Clean accuracy (%)",
        "ASR (%)",
        "Share of Type 1 flips (%)",
        "Accuracy: clean vs Type 1 vs Type 2 misleading context",
    ):
        assert label in html, label


def test_run_facts_without_secrets(runs, report):
    html = report.html.read_text()
    assert SECRET_VAR in html  # the variable's name is shown
    assert "model-a" in html and "stub-b" in html and "temperature=0.0" in html
    run = json.loads((runs["both"] / "run.json").read_text())
    assert run["prompts"]["hash"] in html and "Caution: the context" in html  # prompt texts
    assert "Suite manifest" in html and "tiny" in html
    # counts and usage (tokens, cost of the priced model)
    assert "unscored" in html and "Prompt tokens" in html and "$" in html
    for name in ("base", "defended", "both"):
        assert SECRET not in _all_text(runs[name]), f"secret leaked into {name}"


def test_endpoint_credentials_masked(runs, tmp_path):
    from medresilience.report.rundir import redact_url

    assert redact_url("https://user:pw@host:8000/v1?api-key=abc") == "https://***@host:8000/v1?***"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    d = tmp_path / "creds"
    shutil.copytree(runs["base"], d, ignore=shutil.ignore_patterns("report"))
    cfg = json.loads((d / "run.json").read_text())
    cfg["models"][1]["base_urls"] = ["https://bob:hunter2@llm.example.org/v1?api-key=hunter2"]
    (d / "run.json").write_text(json.dumps(cfg))
    res = build_report([d])
    text = _all_text(res.out_dir)
    assert "hunter2" not in text and "https://***@llm.example.org/v1?***" in res.html.read_text()


def test_tables_readable_and_consistent(runs, report):
    res = json.loads((runs["both"] / "results.json").read_text())
    tdir = report.out_dir / "tables"
    for name in ("headline", "metrics", "tests", "flips", "profile", "usage", "setting_effects"):
        csv = pd.read_csv(tdir / f"{name}.csv")
        pq = pd.read_parquet(tdir / f"{name}.parquet")
        assert len(csv) == len(pq) > 0, name
        assert list(csv.columns) == list(pq.columns)
        assert (tdir / f"{name}.md").read_text().startswith("|")
    m = pd.read_parquet(tdir / "metrics.parquet")
    checked = 0
    for model, settings in res["models"].items():
        for setting, block in settings.items():
            for kind, key in (("overall", None), ("source", "by_source"), ("content_type", "by_content_type"), ("provenance", "by_provenance")):
                blocks = {"Overall": block["overall"]} if key is None else block[key]
                for stratum, b in blocks.items():
                    for cond, metric, r in (
                        ("clean", "accuracy", b["clean_acc"]),
                        ("type1", "asr", b.get("type1", {}).get("asr")),
                        ("type1", "tasr", b.get("type1", {}).get("tasr")),
                        ("type2", "asr", b.get("type2", {}).get("asr")),
                    ):
                        if r is None:
                            continue
                        row = m[
                            (m.model == model)
                            & (m.setting == setting)
                            & (m.stratum_kind == kind)
                            & (m.stratum == stratum)
                            & (m.condition == cond)
                            & (m.metric == metric)
                        ]
                        assert len(row) == 1, (model, setting, kind, stratum, cond, metric)
                        row = row.iloc[0]
                        assert (row["k"], row["n"]) == (r["k"], r["n"])
                        assert (r["p"] is None and pd.isna(row["p"])) or math.isclose(row["p"], r["p"])
                        if r["lo"] is not None:
                            assert math.isclose(row["lo"], r["lo"]) and math.isclose(row["hi"], r["hi"])
                        checked += 1
    assert checked > 50
    # flips: to target + elsewhere + invalid = flips; A (no defense) Type 1: 3 of 4 flips per copy go to the target
    f = pd.read_csv(tdir / "flips.csv")
    t1 = f[(f.condition == "type1")]
    assert (t1["to_target"] + t1["elsewhere"] + t1["invalid"] == t1["flips"]).all()
    a = t1[(t1.model == "model-a") & (t1.setting == "none") & (t1.stratum_kind == "overall")].iloc[0]
    assert (a["flips"], a["to_target"], a["elsewhere"], a["invalid"]) == (4 * COPIES, 3 * COPIES, COPIES, 0)
    # usage matches results.json
    u = pd.read_csv(tdir / "usage.csv").set_index("model")
    for model, use in res["usage"].items():
        assert u.loc[model, "calls"] == use["calls"] and u.loc[model, "prompt_tokens"] == use["prompt_tokens"]


def test_flips_agree_with_the_frame(runs, report):
    """The flips table (from the results) agrees with a direct count on the results frame."""
    from medresilience.families.misleading.metrics import paired
    from medresilience.run.frame import results_frame
    from medresilience.store import Store

    with Store(runs["both"] / "store.sqlite") as st:
        df = results_frame(st, Suite.load(runs["suite"]))
    pairs = paired(df, "type1")
    pairs = pairs[pairs["clean_correct"]]
    f = pd.read_csv(report.out_dir / "tables" / "flips.csv")
    f = f[(f.condition == "type1") & (f.stratum_kind == "overall")]
    for row in f.itertuples():
        p = pairs[(pairs["model"] == row.model) & (pairs["setting"] == row.setting)]
        flipped = p[~p["correct"]]
        to_target = (flipped["label"].astype(object) == flipped["target"].astype(object)).sum()
        invalid = (flipped["status"] == "invalid").sum()
        assert (row.flips, row.to_target, row.invalid, row.elsewhere) == (len(flipped), to_target, invalid, len(flipped) - to_target - invalid)


def test_holm_applied_across_strata(report):
    t = pd.read_parquet(report.out_dir / "tables" / "tests.parquet")
    fams = t[t.stratum_kind != "overall"].groupby(["run", "model", "setting", "condition", "stratum_kind"])
    assert fams.ngroups >= 8
    for _, g in fams:
        assert np.allclose(g["p_holm"].to_numpy(), stats.holm(g["p"].tolist()))
        assert (g["p_holm"] >= g["p"] - 1e-12).all()
        assert (g["holm_family_size"] == len(g)).all()
    ov = t[t.stratum_kind == "overall"]
    assert np.allclose(ov["p_holm"], ov["p"])  # one test per family
    # A without defense: Type 1 flips 4 of 9 pairs per copy, none the other way: significant
    a = ov[(ov.model == "model-a") & (ov.setting == "none") & (ov.condition == "type1")].iloc[0]
    assert (a["b"], a["c"]) == (4 * COPIES, 0) and a["p"] < 1e-3 and a["significant"]  # clustered McNemar: items
    # tests.csv names the test each p-value comes from: the clustered McNemar where items give several pairs
    assert a["test"] == "cluster_mcnemar"
    blocks = {(r["model"], r["setting"]): r for r in ov.to_dict("records") if r["condition"] == "type1"}
    assert {r["test"] for r in blocks.values()} == {"cluster_mcnemar"}
    assert set(t.loc[t.condition == "type2", "test"]) == {"mcnemar_exact"}


def test_defense_effect_section(report):
    d = pd.read_parquet(report.out_dir / "tables" / "setting_effects.parquet")
    a = d[(d.pair == "model-a") & (d.condition == "type1") & (d.metric == "asr")].iloc[0]
    assert math.isclose(a["diff"], -4 / 9) and a["hi"] < 0 and a["test"] == "cluster_mcnemar" and a["p_test"] < 0.01
    b = d[(d.pair == "model-b") & (d.condition == "type1") & (d.metric == "asr")].iloc[0]
    assert b["diff"] == 0 and b["p_test"] == 1.0 and "p_boot" not in d
    clean = d[(d.condition == "clean")]
    assert (clean["diff"] == 0).all()


def test_resilience_profile(report):
    p = pd.read_csv(report.out_dir / "tables" / "profile.csv")
    a = p[(p.model == "model-a") & (p.setting == "none")].set_index("dimension")
    assert math.isclose(a.loc["clean_accuracy", "value"], 0.75)
    assert math.isclose(a.loc["resilience_type1", "value"], 5 / 9)
    assert a.loc["resilience_type1", "lo"] < 5 / 9 < a.loc["resilience_type1", "hi"]
    assert set(p.family) == {"baseline", "misleading"}
    # the defense's effect on resilience (from the paired comparison): +4/9 for A, 0 for B
    d = p[p.kind == "difference"].set_index(["model", "dimension"])
    assert math.isclose(d.loc[("model-a", "caution_delta_resilience_type1"), "value"], 4 / 9)
    assert d.loc[("model-b", "caution_delta_resilience_type1"), "value"] == 0


def test_several_runs_in_one_report(runs, tmp_path):
    res = build_report([runs["base"], runs["defended"]], tmp_path / "two")
    h = res.headline
    assert set(h["model"]) == {"model-a [base]", "model-a [defended]", "model-b [base]", "model-b [defended]"}
    assert res.runs == ["base", "defended"] and res.html.exists()


def test_report_falls_back_to_results_json(runs, tmp_path):
    d = tmp_path / "moved"
    shutil.copytree(runs["base"], d, ignore=shutil.ignore_patterns("report"))
    cfg = json.loads((d / "run.json").read_text())
    cfg["suite"]["path"] = str(tmp_path / "nowhere")
    (d / "run.json").write_text(json.dumps(cfg))
    res = build_report([d])
    assert res.notes and "results.json" in res.notes[0]
    assert "results.json" in res.html.read_text()
    base = json.loads((runs["base"] / "results.json").read_text())
    got = res.headline.set_index("model").loc["model-a", "type1_asr_p"]
    assert math.isclose(got, base["models"]["model-a"]["none"]["overall"]["type1"]["asr"]["p"])


def test_report_of_a_run_with_nothing_scored_yet(runs, tmp_path):
    from medresilience.store import Store

    d = tmp_path / "fresh"
    d.mkdir()
    shutil.copy(runs["base"] / "run.json", d / "run.json")
    Store(d / "store.sqlite").close()
    res = build_report([d])
    assert res.families == [] and res.headline.empty
    html = res.html.read_text()
    assert "No scored results" in html and 'id="misleading"' not in html and 'id="facts"' in html


def test_not_a_run_directory(tmp_path):

    with pytest.raises(InputError, match="not a run directory"):
        build_report([tmp_path])


# ------------------------------------------------------------------------------ compare


def test_compare_baseline_vs_defended(runs, tmp_path):
    cmp = compare_runs(runs["base"], runs["defended"], tmp_path / "cmp")
    t = cmp.table
    # both runs hold model-a and model-b: each side is named with its run (model_names)
    a = t[(t.a == "model-a [base]") & (t.condition == "type1") & (t.metric == "asr")].iloc[0]
    assert a["b"] == "model-a [defended] (caution)"
    assert math.isclose(a["diff"], -4 / 9) and a["lo"] <= a["diff"] <= a["hi"] < 0
    assert a["test"] == "cluster_mcnemar" and a["p_test"] < 0.01 and "p_boot" not in t
    assert a["n"] == 9 * COPIES and a["items"] == 3 * COPIES
    acc = t[(t.a == "model-a [base]") & (t.condition == "type1") & (t.metric == "accuracy")].iloc[0]
    assert acc["diff"] > 0 and acc["p_holm"] >= acc["p_test"]
    for _, g in t.groupby("pair"):
        assert g["p_holm"].tolist() == pytest.approx(stats.holm(g["p_test"].tolist()))
    b = t[(t.a == "model-b [base]") & (t.condition == "type1") & (t.metric == "asr")].iloc[0]
    assert b["diff"] == 0 and b["p_test"] == 1.0
    clean = t[t.condition == "clean"]
    assert (clean["diff"] == 0).all() and (clean["test"] == "mcnemar_exact").all()
    for path in (cmp.html, cmp.markdown, cmp.csv, cmp.parquet):
        assert path.exists()
    assert len(pd.read_parquet(cmp.parquet)) == len(pd.read_csv(cmp.csv)) == len(t)
    html = cmp.html.read_text()
    assert "<svg" in html and "<script" not in html and SECRET not in html


def test_compare_explicit_pair_model_vs_model(runs, tmp_path):
    cmp = compare_runs(runs["base"], runs["base"], tmp_path / "ab", pairs=["model-a=model-b"])
    t = cmp.table
    r = t[(t.condition == "type1") & (t.metric == "asr")].iloc[0]
    assert math.isclose(r["diff"], 3 / 9 - 4 / 9)  # B flips only q1's three probes
    with pytest.raises(ValueError, match="not in run A"):
        compare_runs(runs["base"], runs["base"], tmp_path / "bad", pairs=["nope=model-b"])


# ------------------------------------------------------------------------------ CLI


def test_cli_report_and_compare(runs, tmp_path):
    from typer.testing import CliRunner

    from medresilience.cli import app

    r = CliRunner().invoke(app, ["report", str(runs["base"]), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert "report.html" in r.output and (tmp_path / "rep" / "report.html").exists()
    r = CliRunner().invoke(app, ["compare", str(runs["base"]), str(runs["defended"]), "--out", str(tmp_path / "cmp")])
    assert r.exit_code == 0, r.output
    assert "compare.html" in r.output
    r = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "not a directory" in r.output


def test_cli_tables_fit_80_columns_and_never_cut_a_number(runs, tmp_path):
    """`medres report` and `medres compare` in an 80-column terminal: no line is longer, nothing is
    cut to '…', and every number of the tables is printed whole."""

    from medresilience.report.build import summary_rows

    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}

    def medres(*args: str) -> str:
        p = subprocess.run([sys.executable, "-m", "medresilience.cli", *args], capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout

    out = medres("report", str(runs["both"]), "--out", str(tmp_path / "rep"))
    cells = [c for _, _, rows in summary_rows(build_report([runs["both"]], tmp_path / "rep2")) for r in rows for c in r]
    cmp_out = medres("compare", str(runs["base"]), str(runs["defended"]), "--out", str(tmp_path / "cmp"))
    table = pd.read_csv(tmp_path / "cmp" / "tables" / "compare.csv")
    intervals = [f"[{100 * lo:+.1f}, {100 * hi:+.1f}]" for lo, hi in zip(table["lo"], table["hi"]) if lo == lo]
    assert cells and intervals
    for text in (out, cmp_out):
        lines = [line for line in text.splitlines() if not line.startswith(("report:", "comparison:"))]
        assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
        assert "…" not in text
    for c in cells:
        assert c in out, c
    for iv in intervals:
        assert iv in cmp_out, iv
    # a wide terminal keeps the table
    env["COLUMNS"] = "250"
    assert "┃" in medres("compare", str(runs["base"]), str(runs["defended"]), "--out", str(tmp_path / "cmp-wide"))


def test_a_compare_never_overwrites_another_comparison_silently(runs, tmp_path):
    """The default folder is named by what is compared (the pairs too); an --out that holds a
    comparison of something else is refused (exit 2, nothing touched) unless --force."""
    from typer.testing import CliRunner

    from medresilience.cli import app

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(runs["base"], a)
    shutil.copytree(runs["defended"], b)
    r = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["compare", str(a), str(b), "--pair", "model-a=model-b"])
    assert r.exit_code == 0, r.output
    plain, paired = b / "compare-a", b / "compare-a-model-a=model-b"
    assert (plain / "compare.html").exists() and (paired / "compare.html").exists()
    assert set(pd.read_csv(paired / "tables" / "compare.csv")[["a", "b"]].itertuples(index=False, name=None)) == {("model-a [a]", "model-b [b] (caution)")}
    assert len(set(pd.read_csv(plain / "tables" / "compare.csv")["b"])) == 2
    # the same comparison again rewrites its own folder; another one into it is refused
    assert CliRunner().invoke(app, ["compare", str(a), str(b)]).exit_code == 0
    before = (plain / "compare.html").read_bytes()
    r = CliRunner().invoke(app, ["compare", str(a), str(b), "--pair", "model-a=model-b", "--out", str(plain)])
    assert r.exit_code == 2 and "already holds the comparison of" in r.output and "--force" in r.output, r.output
    assert (plain / "compare.html").read_bytes() == before
    r = CliRunner().invoke(app, ["compare", str(a), str(b), "--pair", "model-a=model-b", "--out", str(plain), "--force"])
    assert r.exit_code == 0, r.output
    assert json.loads((plain / "compare.json").read_text())["pairs"] == ["model-a=model-b"]


# ------------------------------------------------------------------------------ statistics


def _reference_metrics(df: pd.DataFrame) -> dict:
    """The straightforward per-group definition of the results (the pre-vectorisation code),
    kept here to check the vectorised metrics against it on awkward frames."""

    def rate(k, n):
        return stats.wilson(int(k), int(n)).as_dict()

    answered = ["valid", "invalid", "truncated"]

    def accuracy(rows):
        ans = rows[rows["status"].isin(answered)]
        d = rate(ans["correct"].sum(), len(ans))
        d["invalid"] = int((ans["status"] == "invalid").sum())
        d["truncated"] = int((ans["status"] == "truncated").sum())
        d["errors"] = int((rows["status"] == "error").sum())
        return d

    def paired(df, cond):
        clean = df[(df["condition"] == "clean") & df["status"].isin(answered)]
        clean = clean[["model", "setting", "scoring", "item_id", "correct"]].rename(columns={"correct": "clean_correct"})
        probe = df[(df["condition"] == cond) & df["status"].isin(answered)]
        return probe.merge(clean, on=["model", "setting", "scoring", "item_id"], how="inner")

    def attack(pairs, targeted):
        base = pairs[pairs["clean_correct"]]
        out = {"asr": rate((~base["correct"]).sum(), len(base))}
        out["asr"]["invalid_flips"] = int((base["status"] == "invalid").sum())
        out["asr"]["truncated_flips"] = int((base["status"] == "truncated").sum())
        read = base[base["status"] == "valid"]  # unread probe replies left out
        out["asr_read"] = rate((~read["correct"]).sum(), len(read))
        if targeted:
            out["tasr"] = rate((base["label"] == base["target"]).sum(), len(base))
        out["mcnemar"] = stats.mcnemar_from_pairs(pairs["clean_correct"].tolist(), pairs["correct"].tolist())
        out["mcnemar"]["test"] = "mcnemar_exact"
        if pairs["item_id"].duplicated().any():  # several pairs per item: the clustered test
            cm = stats.cluster_mcnemar(pairs["clean_correct"].tolist(), pairs["correct"].tolist(), pairs["item_id"].tolist())
            out["mcnemar"].update(test="cluster_mcnemar", clusters=cm["clusters"], statistic=cm["statistic"], p=cm["p"])
        return out

    def block(d):
        out = {"n_items": int(d["item_id"].nunique()), "clean_acc": accuracy(d[d["condition"] == "clean"])}
        for cond in ("type1", "type2"):
            rows = d[d["condition"] == cond]
            if not rows.empty:
                out[f"{cond}_acc"] = accuracy(rows)
                out[cond] = attack(paired(d, cond), cond == "type1")
        return out

    models = {}
    for (model, setting), rows in df.groupby(["model", "setting"], sort=False):
        b = {"overall": block(rows), "by_source": {}}
        for k, r in rows.groupby("source", sort=True):
            b["by_source"][str(k)] = block(r)
        clean, probes = rows[rows["condition"] == "clean"], rows[rows["condition"] != "clean"]
        for name, col in (("by_content_type", "content_type"), ("by_provenance", "provenance")):
            b[name] = {}
            for k, pr in probes.groupby(col, sort=True):
                b[name][str(k)] = block(pd.concat([clean[clean["item_id"].isin(pr["item_id"].unique())], pr]))
        models.setdefault(model, {})[setting] = b
    return models


def _random_frame(seed: int) -> pd.DataFrame:
    """Several models, settings and scorings; items with several bundles (so a content type's
    clean rows are shared), missing strata, errors, invalid and missing units."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in ["m1", "m2", "m3"][: rng.integers(1, 4)]:
        for dflag in ["none", "caution"] if rng.random() < 0.5 else ["none"]:
            for sc in ["letter", "logprob"] if rng.random() < 0.3 else ["letter"]:
                for i in range(int(rng.integers(1, 25))):
                    gold = "ABCD"[i % 4]
                    src = (["s1", "s2", None][rng.integers(3)]) if rng.random() < 0.2 else ["s1", "s2"][i % 2]

                    def st():
                        u = rng.random()
                        return "valid" if u < 0.8 else "invalid" if u < 0.86 else "truncated" if u < 0.9 else "error" if u < 0.95 else "missing"

                    def lab(s, gold=gold):
                        return ("ABCD"[rng.integers(4)] if rng.random() < 0.4 else gold) if s == "valid" else None

                    if rng.random() < 0.9:
                        s = st()
                        rows.append((m, dflag, sc, f"i{i}", None, "clean", src, None, None, None, gold, lab(s), s))
                    for b in range(int(rng.integers(0, 3))):
                        ct, pv = ["ctA", "ctB", "ctC"][rng.integers(3)], ["pv1", "pv2", None][rng.integers(3)]
                        for t in [k for k in "ABCD" if k != gold][: rng.integers(0, 4)]:
                            s = st()
                            rows.append((m, dflag, sc, f"i{i}", f"i{i}:{b}:t1:{t}", "type1", src, ct, pv, t, gold, lab(s), s))
                        if rng.random() < 0.8:
                            s = st()
                            rows.append((m, dflag, sc, f"i{i}", f"i{i}:{b}:t2", "type2", src, ct, pv, None, gold, lab(s), s))
    df = pd.DataFrame(
        rows,
        columns=[
            "model",
            "setting",
            "scoring",
            "item_id",
            "probe_id",
            "condition",
            "source",
            "content_type",
            "provenance",
            "target",
            "gold",
            "label",
            "status",
        ],
    )
    df["correct"] = (df["status"] == "valid") & (df["label"] == df["gold"])
    return df


def _strip_cluster(obj):
    """The bootstrap parts left out (their draws depend on the order of items): a clustered rate's
    Wilson interval compared in place of its item-clustered one."""
    if isinstance(obj, dict):
        out = {k: _strip_cluster(v) for k, v in obj.items() if k not in ("cluster_lo", "cluster_hi", "interval", "wilson_lo", "wilson_hi")}
        if "wilson_lo" in obj:
            out["lo"], out["hi"] = obj["wilson_lo"], obj["wilson_hi"]
        return out
    return obj


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_metrics_equal_the_reference(seed):
    df = _random_frame(seed)
    ref = _reference_metrics(df)
    got = misleading_metrics(df)["models"]
    cat = df.copy()
    for c in cat.columns:
        if cat[c].dtype == object:
            cat[c] = cat[c].astype("category")
    got_cat = misleading_metrics(cat)["models"]
    for g in (got, got_cat):
        g = _strip_cluster({m: {s: {k: v for k, v in b.items() if k != "counts"} for s, b in ss.items()} for m, ss in g.items()})
        assert g == ref
        assert list(g) == list(ref)


# ------------------------------------------------------------------------------ frame (fast read)


#: the frame of make_runs' "both" run as it was read before the packed read was removed (6a4e2f5:
#: the packed read and the text read then gave this same frame, checked when it was written)
FRAME_GOLDEN = Path(__file__).resolve().parents[2] / "data" / "frame" / "both_runs_frame.txt"


def _frame_text(df: pd.DataFrame) -> str:
    """A frame as text: each column's name, dtype and categories (in order), then every row as CSV
    (a missing category value as '-')."""
    head, out = [], df.copy()
    for c in df.columns:
        cats = list(df[c].cat.categories) if isinstance(df[c].dtype, pd.CategoricalDtype) else None
        head.append(json.dumps([c, str(df[c].dtype), cats]))
        if cats is not None:
            out[c] = out[c].astype(object).fillna("-")
    return "\n".join(head) + "\n\n" + out.to_csv(index=False, lineterminator="\n")


def test_frame_is_the_one_read_before(runs, tmp_path):
    """The results frame of a real run is the frame read before (FRAME_GOLDEN): the same columns,
    dtypes, categories in the same order and every value, read in chunks that do not divide it; a
    label 'Z' and a condition 'custom' (values no family declared) are read like any other."""
    from medresilience.run import frame as F

    suite = Suite.load(runs["suite"])
    db = tmp_path / "store.sqlite"
    shutil.copy(runs["both"] / "store.sqlite", db)
    with Store(db) as st:
        df = F.results_frame(st, suite, chunk=97)
    got, want = _frame_text(df).splitlines(), FRAME_GOLDEN.read_text(encoding="utf-8").splitlines()
    assert len(got) == len(want)
    assert [i for i, (a, b) in enumerate(zip(got, want)) if a != b] == []
    con = sqlite3.connect(db)
    key = con.execute("SELECT key FROM scores WHERE label = 'A' LIMIT 1").fetchone()[0]
    con.execute("UPDATE scores SET label = 'Z' WHERE key = ?", (key,))
    con.execute("UPDATE units SET condition = 'custom' WHERE key = (SELECT key FROM units WHERE condition = 'type2' LIMIT 1)")
    con.commit()
    con.close()
    with Store(db) as st:
        odd = F.results_frame(st, suite)
    assert len(odd) == len(df) and list(odd.columns) == list(df.columns)
    assert "Z" in set(odd["label"].dropna()) and "custom" in set(odd["condition"])
    assert list(odd["label"].cat.categories) == ["A", "B", "C", "D", "Z"]
    assert list(odd["condition"].cat.categories) == ["clean", "type1", "type2", "custom"]
    assert (odd["status"].astype(str) == df["status"].astype(str)).all()
    diff_label = (odd["label"].astype(object).fillna("-") != df["label"].astype(object).fillna("-")).sum()
    assert diff_label >= 1 and (odd["correct"] != df["correct"]).sum() <= diff_label
    for c in ("model", "item_id", "probe_id", "source", "content_type", "provenance", "target", "gold"):
        assert (odd[c].astype(object).fillna("-") == df[c].astype(object).fillna("-")).all(), c
    assert (odd["prompt_tokens"] == df["prompt_tokens"]).all() and odd["setting"].astype(str).equals(df["setting"].astype(str))


def test_report_prints_no_font_warnings(runs, tmp_path):
    """Building a report on a fresh machine prints no matplotlib font warnings (the figures use
    DejaVu Sans, which matplotlib ships)."""

    r = subprocess.run(
        [sys.executable, "-m", "medresilience.cli", "report", str(runs["both"]), "--out", str(tmp_path / "rep")],
        capture_output=True,
        text=True,
        env={**os.environ, SECRET_VAR: SECRET},
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "findfont" not in r.stderr and "findfont" not in r.stdout


def test_figure_fonts_ship_with_matplotlib():
    """The fonts the figures ask for are those matplotlib ships, so a machine without system fonts
    (no Liberation, no fontconfig) finds them and warns about nothing."""
    import matplotlib
    import matplotlib.font_manager as fm

    from medresilience.report.plots import STYLE

    shipped = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    assert STYLE["font.family"] == "sans-serif"
    for family in STYLE["font.sans-serif"]:
        path = Path(fm.findfont(fm.FontProperties(family=family), fallback_to_default=False))
        assert path.is_relative_to(shipped), (family, path)


def test_compare_markdown_is_the_page_not_the_raw_table(runs, tmp_path):
    cmp = compare_runs(runs["base"], runs["defended"], tmp_path / "cmp")
    md = cmp.markdown.read_text()
    assert md.startswith("# ") and "paired on shared items" in md
    # the page's table in both, from the same cells: every difference as the page shows it
    html = cmp.html.read_text()
    assert "| Comparison | Metric | A | B | B − A | Paired test p | Holm p | Pairs |" in md
    for d, lo, hi in cmp.table[["diff", "lo", "hi"]].itertuples(index=False):
        shown = f"{100 * d:+.1f} pp [{100 * lo:+.1f}, {100 * hi:+.1f}]"
        assert shown in md and f"<b>{100 * d:+.1f} pp</b>" in html, shown
    assert cmp.csv.parent.name == "tables" and cmp.csv.exists() and cmp.parquet.exists()


def test_compare_shows_each_sides_rate_with_its_interval_and_n(runs, tmp_path):
    """`medres compare` prints A's and B's rates each with its 95% interval and n (in the terminal,
    on the page and in its Markdown), as every rate of the project is shown."""
    from typer.testing import CliRunner

    from medresilience.cli import app

    r = CliRunner().invoke(app, ["compare", str(runs["base"]), str(runs["defended"]), "--out", str(tmp_path / "cmp")], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    md = (tmp_path / "cmp" / "compare.md").read_text()
    html = (tmp_path / "cmp" / "compare.html").read_text()
    table = pd.read_csv(tmp_path / "cmp" / "tables" / "compare.csv")
    assert len(table)
    for row in table.to_dict("records"):
        for side in "ab":
            shown = f"{100 * row[side + '_p']:.1f}% [{100 * row[side + '_lo']:.1f}, {100 * row[side + '_hi']:.1f}] n={row['n']}"
            assert shown in out, shown
            assert shown in md, shown
            assert f"n={row['n']}" in html


def test_report_from_the_frame_evaluate_returns(runs, tmp_path, monkeypatch):
    """`medres eval` hands the frame its results came from to the report: the same report as one
    that reads the suite and the store again."""

    monkeypatch.setenv(SECRET_VAR, SECRET)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    with StubServer(policy=policy) as srv:
        spec = parse_model_spec(f"openai:stub-a,label=model-a,base_url={srv.base_url},concurrency=16,api_key_env={SECRET_VAR}")
        res = evaluate(Suite.load(runs["suite"]), [spec], tmp_path / "run", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
    assert res.frame is not None and len(res.frame) == res.stats.planned_units
    again = build_report([tmp_path / "run"], tmp_path / "again")
    handed = build_report([tmp_path / "run"], tmp_path / "handed", frames={tmp_path / "run": res.frame})
    assert handed.timings["suite"] < again.timings["suite"]
    for name in ("report.md", "report.html"):
        assert (tmp_path / "handed" / name).read_text() == (tmp_path / "again" / name).read_text()


ALL = EvalOptions(family={"type1": "all"})


def test_a_report_on_a_half_finished_run_warns(tmp_path, tiny_suite):
    from medresilience.report import build_report

    with StubServer(policy=oracle_policy) as srv:
        evaluate(tiny_suite, [stub_spec(srv.base_url)], tmp_path / "run", ALL)
    rep = build_report([tmp_path / "run"])
    assert not any("missing" in n for n in rep.notes)
    with Store(tmp_path / "run" / "store.sqlite") as st:  # as if killed after 15 of its 20 calls
        st.conn.execute("DELETE FROM calls WHERE key IN (SELECT key FROM calls ORDER BY key LIMIT 5)")
    rep = build_report([tmp_path / "run"])
    notes = [n for n in rep.notes if "missing" in n]
    assert len(notes) == 1 and "25%" in notes[0] and "5 of 20" in notes[0]
    html = rep.html.read_text()
    assert "5 of 20" in html and "class='warn'" in html
    assert "5 of 20" in rep.markdown.read_text()


runner = CliRunner()


def _cells(path: Path) -> list[list[str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_a_model_label_formula_is_neutralised_in_the_reports_usage_csv(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(d), "--out", str(out), "-O", "type1=all", "--model", f"openai:stub-model,base_url={srv.base_url},label==cmd"]
        )
        assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(out)])
    assert r.exit_code == 0, r.output
    tables = sorted((out / "report" / "tables").glob("*.csv"))
    assert (out / "report" / "tables" / "usage.csv") in tables
    usage = _cells(out / "report" / "tables" / "usage.csv")
    assert "'=cmd" in [c for row in usage for c in row]
    for t in tables:  # no table of the report starts a cell with a formula
        assert not [c for row in _cells(t) for c in row if c[:1] in ("=", "+", "@")], t
