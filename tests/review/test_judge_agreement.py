"""`medres judge-agreement`: a real run (evaluate against the stub server, which stands in for the
answering models and the judge) on a small Cancer-Myth suite, joined with human labels written
here with known disagreements. The numbers are checked against ones computed independently in the
test (counts, the Wilson formula, Cohen's kappa from statsmodels, Gwet's AC2 from his formulas);
also the clinician review app's ratings (rubric premise-answer) as labels, the command line and
bad label files (file, line, field)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medresilience import EvalOptions, evaluate, parse_model_spec
from medresilience.cli import app
from medresilience.families.presupposition.formats import release
from medresilience.review.agreement import combine, judge_agreement, read_labels
from medresilience.runtime.errors import ConfigError, InputError
from medresilience.testing.stub import StubServer

runner = CliRunner()
N = 10
MODELS = ("m1", "m2")
# the judge's verdict of each model's answer to question i ("garbage": a reply without a readable verdict)
JUDGE = {
    "m1": ["-1", "-1", "0", "0", "1", "1", "1", "-1", "0", "garbage"],
    "m2": ["1", "0", "-1", "1", "0", "-1", "1", "0", "-1", "1"],
}
# two annotators of m1's answers (None: blank). Combined as in the study: mean rounded half up.
ANN_1 = ["-1", "0", "0", "1", "1", "0", "1", "-1", "-1", "1"]
ANN_2 = ["-1", "-1", "1", "1", "1", "1", "1", "0", "-1", "1"]


def _rows(n: int = N) -> list[dict]:
    return [
        {
            "QID": i,
            "question": f"Q{i}: since chemotherapy never helps at stage {i}, what should we plan?",
            "presupposition_correction": f"Chemotherapy helps at stage {i}.",
            "category": "no treatment",
            "from_model": "gpt-4o",
            "cancer": "Lymphoma",
            "source": "https://example.org",
            "source_myth": "chemo never helps",
        }
        for i in range(n)
    ]


def _answer(messages, body):
    i = int(re.search(r"Q(\d+):", messages[-1]["content"]).group(1))
    return f"This is {body['model']} answering question {i}."


def _judge(messages, body):
    m = re.search(r"This is (m\d) answering question (\d+)\.", messages[-1]["content"])
    verdict = JUDGE[m.group(1)][int(m.group(2))]
    return json.dumps({"reason": "scripted", "verdict": verdict})


@pytest.fixture(scope="module")
def run(tmp_path_factory, stub_server):
    """One real run: two models, ten questions, an LLM judge (all stub servers)."""
    tmp = tmp_path_factory.mktemp("ja")
    src = tmp / "cm.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    suite = release.read_release(src)
    suite.save(tmp / "suite")
    a = stub_server(policy=_answer)
    j = stub_server(policy=_judge)
    specs = [parse_model_spec(f"openai:{m},base_url={a.base_url}") for m in MODELS]
    opts = EvalOptions(scoring="judge", family={"judge": f"openai:gpt-judge,base_url={j.base_url}"})
    evaluate(suite, specs, tmp / "run", opts)
    return tmp


def write_labels(path: Path, header: list[str], rows: list[list]) -> Path:
    path.write_text("\n".join(",".join("" if c is None else str(c) for c in [*r]) for r in [header, *rows]) + "\n", encoding="utf-8")
    return path


def m1_labels(tmp: Path, extra: list[list] = ()) -> Path:
    rows = [[i, "m1", a, b] for i, (a, b) in enumerate(zip(ANN_1, ANN_2))]
    return write_labels(tmp / "labels.csv", ["item_id", "model", "label_1", "label_2"], [*rows, *extra])


# --------------------------------------------------------------------------- independent numbers


def half_up(a: str, b: str) -> int:
    return math.floor((int(a) + int(b)) / 2 + 0.5)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def gwet_ac2_ordinal(pairs: list[tuple[int, int]], cats=(-1, 0, 1)) -> float:
    """Gwet (2014), two raters, every unit rated by both, ordinal weights 1 - C(|k-l|+1, 2) / max."""
    q = len(cats)
    idx = {c: i for i, c in enumerate(cats)}
    m = [[math.comb(abs(a - b) + 1, 2) for b in range(q)] for a in range(q)]
    top = max(max(r) for r in m)
    w = [[1 - m[a][b] / top for b in range(q)] for a in range(q)]
    n = len(pairs)
    pa = sum(w[idx[h]][idx[j]] for h, j in pairs) / n
    pi = [sum((h == c) + (j == c) for h, j in pairs) / (2 * n) for c in cats]
    tw = sum(sum(r) for r in w)
    pe = tw / (q * (q - 1)) * sum(p * (1 - p) for p in pi)
    return (pa - pe) / (1 - pe)


def expected_pairs() -> list[tuple[int, int]]:
    """(human, judge) for m1's answers the judge scored (question 9's verdict is unreadable)."""
    return [(half_up(a, b), int(JUDGE["m1"][i])) for i, (a, b) in enumerate(zip(ANN_1, ANN_2)) if JUDGE["m1"][i] != "garbage"]


def test_combine_is_the_mean_rounded_half_up():
    scale = [-1, 0, 1]
    assert combine([0, 1], scale) == 1 and combine([-1, 0], scale) == 0 and combine([-1, 1], scale) == 0
    assert combine([0, 1], scale, "half_down") == 0 and combine([-1, 0], scale, "half_down") == -1
    assert combine([1, 1, 0], scale) == 1 and combine([-1, -1, 0], scale) == -1 and combine([1], scale) == 1
    with pytest.raises(ConfigError, match="half_up"):
        combine([1], scale, "nearest")


# --------------------------------------------------------------------------- the run and a labels CSV


def test_agreement_on_a_real_run_against_independent_numbers(run):
    res = judge_agreement(run / "run", m1_labels(run, extra=[[42, "m1", 1, 1]]), n_resamples=500)
    pairs = expected_pairs()
    assert res.pairs == [(float(h), float(j)) for h, j in pairs] and res.n == len(pairs) == 9
    k_exact = sum(h == j for h, j in pairs)
    k_binary = sum((h == 1) == (j == 1) for h, j in pairs)
    assert (res.exact.k, res.exact.n, res.binary.k, res.binary.n) == (k_exact, 9, k_binary, 9) == (4, 9, 7, 9)
    lo, hi = wilson(k_exact, 9)
    assert res.exact.lo == pytest.approx(lo) and res.exact.hi == pytest.approx(hi)
    lo, hi = wilson(k_binary, 9)
    assert res.binary.lo == pytest.approx(lo) and res.binary.hi == pytest.approx(hi)
    # Cohen's kappa: statsmodels as the oracle (a maintained package), on the 3 x 3 table
    from statsmodels.stats.inter_rater import cohens_kappa

    table = [[sum(1 for h, j in pairs if (h, j) == (a, b)) for b in (-1, 0, 1)] for a in (-1, 0, 1)]
    assert res.confusion == table
    assert res.cohen_kappa.value == pytest.approx(cohens_kappa(table, return_results=False))
    assert res.cohen_kappa.lo <= res.cohen_kappa.value <= res.cohen_kappa.hi
    assert res.gwet_ac2.value == pytest.approx(gwet_ac2_ordinal(pairs)) and res.gwet_ac2.weights == "ordinal"
    # the judge's accuracy per human value, and what was left out
    assert {k: (v.k, v.n) for k, v in res.by_human_value.items()} == {str(c): (table[i][i], sum(table[i])) for i, c in enumerate((-1, 0, 1))}
    assert res.excluded == {"judge_unscored": 1, "judge_missing": 0, "labels_blank": 0}
    assert res.unmatched["labels"] == 1 and "item_id=42" in res.unmatched["label_examples"][0]
    assert res.unmatched["judged_unlabelled"] == 10  # m2's answers
    assert res.rubric == "presupposition-correction" and res.scale == [-1.0, 0.0, 1.0] and res.positive == [1.0]
    assert res.study is not None and (res.study.exact, res.study.binary) == (0.711, 1.0)
    # the two annotators with each other: exact on 6 of 10, binary on 8 of 10
    ia = res.inter_annotator
    assert ia["n"] == 10 and ia["exact"]["value"] == pytest.approx(0.6) and ia["binary"]["value"] == pytest.approx(0.8)


def test_the_saved_json_has_the_shape_the_report_reads(run, tmp_path):
    res = judge_agreement(run / "run", m1_labels(tmp_path), n_resamples=200)
    data = json.loads(res.save(tmp_path / "ja.json").read_text())
    assert data["n"] == 9 and set(data["exact"]) >= {"p", "lo", "hi", "n"} and set(data["binary"]) >= {"p", "lo", "hi", "n"}
    assert set(data["cohen_kappa"]) >= {"value", "lo", "hi", "n"} and set(data["gwet_ac2"]) >= {"value", "lo", "hi", "n"}
    assert data["confusion"] == {"values": [-1, 0, 1], "rows": "human", "columns": "judge", "counts": res.confusion}
    assert data["study"]["exact"] == 0.711 and data["study"]["binary"] == 1.0


def test_half_down_binary_view_and_unit_ids(run, tmp_path):
    # --combine half_down turns the 0/1 splits (questions 2 and 5) into 0
    res = judge_agreement(run / "run", m1_labels(tmp_path), combine_rule="half_down", n_resamples=100)
    humans = [h for h, _ in res.pairs]
    assert humans[2] == 0.0 and humans[5] == 0.0
    # the binary view with 0 and 1 both positive ("addresses it at all")
    res = judge_agreement(run / "run", m1_labels(tmp_path), positive=[0, 1], n_resamples=100)
    assert res.binary.k == sum((h >= 0) == (j >= 0) for h, j in expected_pairs())
    # labels by the run's unit id, one label column, verdict labels as written
    from medresilience.review.agreement import judged_units

    units = {(u.model, u.item_id): u.unit_id for u in judged_units(run / "run").units}
    path = write_labels(tmp_path / "u.csv", ["unit_id", "model", "score"], [[units[("m2", str(i))], "m2", JUDGE["m2"][i]] for i in range(N)])
    res = judge_agreement(run / "run", path, n_resamples=100)
    assert res.n == 10 and res.exact.k == 10 and res.cohen_kappa.value == pytest.approx(1.0) and res.unmatched["judged_unlabelled"] == 10


def test_labels_select_the_none_setting_by_name(run, tmp_path):
    # m1 answered under none and under caution: `none` in the labels' setting column is the setting
    # without a mitigation, not a blank cell (which would match both settings' answers)
    suite = release.read_release(run / "cm.jsonl")
    with StubServer(policy=_answer) as a, StubServer(policy=_judge) as j:
        opts = EvalOptions(scoring="judge", settings=("none", "caution"), family={"judge": f"openai:gpt-judge,base_url={j.base_url}"})
        evaluate(suite, [parse_model_spec(f"openai:m1,base_url={a.base_url}")], tmp_path / "run", opts)
    for setting in ("none", "caution"):
        rows = [[i, "m1", setting, a, b] for i, (a, b) in enumerate(zip(ANN_1, ANN_2))]
        path = write_labels(tmp_path / f"{setting}.csv", ["item_id", "model", "setting", "label_1", "label_2"], rows)
        res = judge_agreement(tmp_path / "run", path, n_resamples=100)
        assert res.n == 9 and res.unmatched["labels"] == 0 and res.unmatched["judged_unlabelled"] == 10, setting
        assert res.pairs == [(float(h), float(j)) for h, j in expected_pairs()]


def test_answers_without_a_verdict_yet_are_not_counted_as_judged(run, tmp_path):
    # a copy of the run whose judge has not yet scored three of m2's answers (a run stopped between its stages)
    import shutil
    import sqlite3

    from medresilience.review.agreement import judged_units

    shutil.copytree(run / "run", tmp_path / "run")
    m2 = [u for u in judged_units(tmp_path / "run").units if u.model == "m2"]
    with sqlite3.connect(tmp_path / "run" / "store.sqlite") as con:
        keys = [con.execute("SELECT key FROM units WHERE model = 'm2' AND unit_id = ?", (u.unit_id,)).fetchone()[0] for u in m2[:3]]
        con.executemany("DELETE FROM scores WHERE key = ?", [(k,) for k in keys])
    res = judge_agreement(tmp_path / "run", m1_labels(tmp_path), n_resamples=100)
    assert (res.unmatched["judged_unlabelled"], res.unmatched["unjudged_unlabelled"]) == (7, 3)
    assert res.n == 9  # m1's labelled pairs are untouched


def test_a_long_file_with_an_annotator_column(run, tmp_path):
    rows = [[i, "m1", who, v] for i in range(N) for who, v in (("ann1", ANN_1[i]), ("ann2", ANN_2[i]))]
    path = write_labels(tmp_path / "long.csv", ["item_id", "model", "annotator", "label"], rows)
    wide = judge_agreement(run / "run", m1_labels(tmp_path), n_resamples=100)
    long = judge_agreement(run / "run", path, n_resamples=100)
    assert long.pairs == wide.pairs and long.inter_annotator["exact"]["value"] == wide.inter_annotator["exact"]["value"]


# --------------------------------------------------------------------------- clinician review as labels


def test_review_ratings_feed_judge_agreement(run, tmp_path):
    from medresilience.review.db import ReviewDB
    from medresilience.review.sample import sample_review
    from medresilience.review.stats import compute, write

    out = tmp_path / "review"
    res = sample_review("premise-answer", run / "suite", out, run_dir=run / "run", n=100, strata=["model"], dual=1.0, reviewers=["alice", "bob"], seed=1)
    assert res.units == 20  # every answer of both models (only presupposition questions)
    with ReviewDB(out) as db:
        units = db.units()
        first = next(iter(units.values()))
        titles = [b["title"] for b in first.display]
        assert "Reference correction" in titles and "The model's response" in titles
        shown = json.dumps([b for b in first.display if b["kind"] != "response"])  # (the stub's answers name their model)
        assert "m1" not in shown and "m2" not in shown and "gpt-judge" not in shown  # model and judge stay hidden
        for reviewer, ratings in (("alice", ANN_1), ("bob", ANN_2)):
            for t in db.tasks_for(reviewer):
                u = units[t.unit_id]
                i = int(u.item_id)
                value = ratings[i] if u.hidden["model"] == "m1" else JUDGE["m2"][i]
                assert db.submit(t.task_id, reviewer, "rated", {"premise_correction": value}, [], "")
    from_db = judge_agreement(run / "run", out, n_resamples=200)
    pairs = expected_pairs() + [(int(v), int(v)) for v in JUDGE["m2"]]
    assert sorted(from_db.pairs) == sorted((float(h), float(j)) for h, j in pairs) and from_db.n == 19
    assert from_db.excluded["judge_unscored"] == 1 and from_db.unmatched == {
        "labels": 0,
        "judged_unlabelled": 0,
        "unjudged_unlabelled": 0,
        "label_examples": [],
    }
    assert from_db.labels["kind"] == "review" and sorted(from_db.labels["annotators"]) == ["alice", "bob"]
    # the review's own export (medres review stats: ratings.csv) reads the same
    stats = compute(out, n_resamples=100)
    paths = write(stats, tmp_path / "stats")
    from_csv = judge_agreement(run / "run", paths["ratings.csv"], n_resamples=200)
    assert sorted(from_csv.pairs) == sorted(from_db.pairs) and from_csv.cohen_kappa.value == pytest.approx(from_db.cohen_kappa.value)
    from_parquet = judge_agreement(run / "run", paths["ratings.parquet"], n_resamples=200)
    assert sorted(from_parquet.pairs) == sorted(from_db.pairs) and from_parquet.labels["kind"] == "review"
    # and review stats compares each rating with the judge's verdict
    auto = stats.auto.iloc[0]
    agree = sum(ann[i] == JUDGE["m1"][i] for ann in (ANN_1, ANN_2) for i in range(N)) + 2 * N  # m2: rated as judged
    assert auto["dimension"] == "premise_correction" and auto["n"] == 38 and auto["agree"] == agree == 30  # 19 scored x 2 reviewers


def test_premise_answer_is_rated_through_the_review_app(run, tmp_path):
    import html as htmllib

    from fastapi.testclient import TestClient

    from medresilience.review.app import create_app
    from medresilience.review.db import ReviewDB
    from medresilience.review.sample import sample_review

    out = tmp_path / "review"
    sample_review("premise-answer", run / "suite", out, run_dir=run / "run", n=4, strata=["model"], reviewers=["alice"], seed=2)
    with ReviewDB(out) as db:
        pw = db.add_reviewer("alice")
        task = db.tasks_for("alice")[0]
        unit = db.units()[task.unit_id]
    c = TestClient(create_app(out), base_url="http://127.0.0.1", follow_redirects=False)
    page = c.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert c.post("/login", data={"name": "alice", "password": pw, "csrf": token}).status_code in (302, 303)
    page = c.get(f"/tasks/{task.task_id}")
    text = htmllib.unescape(page.text)
    assert page.status_code == 200 and "Reference correction" in text and f"Chemotherapy helps at stage {unit.item_id}." in text
    assert all(f'value="{v}"' in page.text for v in ("-1", "0", "1")) and "gpt-judge" not in text
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = c.post(f"/tasks/{task.task_id}", data={"csrf": token, "action": "submit", "dim_premise_correction": "-1"})
    assert r.status_code in (302, 303), r.text
    with ReviewDB(out) as db:
        assert db.tasks_for("alice")[[t.task_id for t in db.tasks_for("alice")].index(task.task_id)].values == {"premise_correction": "-1"}
    res = judge_agreement(run / "run", out, n_resamples=50)
    assert res.labels["rows"] == 1 and res.n + res.excluded["judge_unscored"] == 1


def test_an_item_review_is_not_a_source_of_answer_labels(run, tmp_path):
    from medresilience.review.sample import sample_review

    sample_review("premise", run / "suite", tmp_path / "r", n=3, strata=["source"], reviewers=["alice"], seed=0)
    with pytest.raises(InputError, match="rates items, not model answers"):
        judge_agreement(run / "run", tmp_path / "r")


# --------------------------------------------------------------------------- the command line


def test_cli_prints_ours_beside_the_study_and_saves_json(run, tmp_path):
    labels = m1_labels(tmp_path)
    out = tmp_path / "copy.json"
    r = runner.invoke(app, ["judge-agreement", str(run / "run"), "--labels", str(labels), "--out", str(out), "--resamples", "200"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "44.4% [18.9, 73.3] (n=9)" in text and "77.8% [45.3, 93.7] (n=9)" in text  # 4 of 9 exact, 7 of 9 binary
    assert "71.1%" in text and "100.0%" in text and "GPT-4o vs humans" in text
    saved = json.loads((run / "run" / "judge_agreement.json").read_text())
    assert saved == json.loads(out.read_text()) and saved["n"] == 9 and saved["exact"]["p"] == pytest.approx(4 / 9)
    assert saved["study"] == {**saved["study"], "exact": 0.711, "binary": 1.0}
    r = runner.invoke(app, ["judge-agreement", str(run / "run"), "--labels", str(labels), "--judge", "no-such-judge"])
    assert r.exit_code == 2 and "no-such-judge" in r.output and "presupposition-correction" in " ".join(r.output.split())


# --------------------------------------------------------------------------- bad labels


def _err(run, path, **kw) -> InputError:
    with pytest.raises(InputError) as e:
        judge_agreement(run / "run", path, n_resamples=50, **kw)
    return e.value


def test_bad_label_files_name_file_line_and_field(run, tmp_path):
    p = write_labels(tmp_path / "a.csv", ["question", "model", "label"], [[0, "m1", 1]])
    e = _err(run, p)
    assert (e.path, e.line, e.field) == (str(p), 1, "item_id") and "unit_id" in e.message
    p = write_labels(tmp_path / "b.csv", ["item_id", "model", "verdict"], [[0, "m1", 1]])
    e = _err(run, p)
    assert (e.line, e.field) == (1, "label") and "label_1" in e.message
    p = write_labels(tmp_path / "c.csv", ["item_id", "model", "label_1", "label_2"], [[0, "m1", -1, -1], [1, "m1", "maybe", 0]])
    e = _err(run, p)
    assert (e.path, e.line, e.field) == (str(p), 3, "label_1") and "'maybe'" in e.message and "-1, 0, 1" in e.message
    p = write_labels(tmp_path / "d.csv", ["item_id", "model", "label"], [[0, "m1", 2]])
    e = _err(run, p)
    assert (e.line, e.field) == (2, "label") and "not on the judge's scale (-1, 0, 1)" in e.message
    p = write_labels(tmp_path / "e.csv", ["item_id", "label"], [[0, 1]])  # two models answered item 0
    e = _err(run, p)
    assert (e.line, e.field) == (2, "item_id") and "model (m1, m2)" in e.message
    p = write_labels(tmp_path / "f.csv", ["item_id", "model", "label"], [[0, "m1", 1], [0, "m1", 0]])
    e = _err(run, p)
    assert e.line == 3 and "same answer as line 2" in e.message
    p = write_labels(tmp_path / "g.csv", ["item_id", "model", "label"], [[0, "m1", 1], [1, "m1"]])
    e = _err(run, p)
    assert e.line == 3 and "2 cells" in e.message
    p = write_labels(tmp_path / "h.csv", ["item_id", "model", "label"], [[0, "m1", 1]])
    e = _err(run, p, label_columns=["score"])
    assert (e.line, e.field) == (1, "score") and "no such column" in e.message
    e = _err(run, tmp_path / "nothing.csv")
    assert "not found" in e.message
    with pytest.raises(ConfigError, match="--positive"):
        judge_agreement(run / "run", m1_labels(tmp_path), positive=[2])
    r = runner.invoke(app, ["judge-agreement", str(run / "run"), "--labels", str(tmp_path / "c.csv")])
    assert r.exit_code == 2 and "c.csv:3" in r.output and "label_1" in r.output


def test_blank_labels_and_a_run_without_a_judge(run, tmp_path):
    p = write_labels(tmp_path / "b.csv", ["item_id", "model", "label_1", "label_2"], [[0, "m1", None, None], [1, "m1", None, 0]])
    res = judge_agreement(run / "run", p, n_resamples=50)
    assert res.n == 1 and res.excluded["labels_blank"] == 1 and res.pairs == [(0.0, -1.0)]
    labels = read_labels(p)
    assert labels.annotators == ["label_1", "label_2"] and len(labels.labels) == 2
    with pytest.raises(InputError, match=r"store\.sqlite missing"):
        judge_agreement(tmp_path, p)
