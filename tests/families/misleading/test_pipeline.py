"""The misleading-context pipeline end to end against a real local HTTP server (the stub stands in
for a model, the boundary we do not own): plan, dedupe, calls, store, scores, metrics."""

from __future__ import annotations

import json

from conftest import make_tiny_suite, oracle_policy
from medresilience.models.spec import parse_model_spec
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.store import Store
from medresilience.testing.stub import StubServer


def _spec(url: str, **kw) -> object:
    extra = "".join(f",{k}={v}" for k, v in kw.items())
    return parse_model_spec(f"openai:stub-model,base_url={url},concurrency=8{extra}")


def test_exact_metrics_and_call_counts(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(family={"type1": "all"}))
        n, k = 4, 3
        # exactly N clean + N*k Type 1 + N Type 2 calls
        assert res.stats.called == n + n * k + n == srv.stats.total
        block = res.results.models["stub-model"]["none"]["overall"]
        assert (block["clean_acc"]["k"], block["clean_acc"]["n"]) == (3, 4)
        # clean-correct items q1..q3 give 9 Type 1 pairs: q1 flips 3 times to its targets, q3 once elsewhere
        assert (block["type1"]["asr"]["k"], block["type1"]["asr"]["n"]) == (4, 9)
        assert (block["type1"]["tasr"]["k"], block["type1"]["tasr"]["n"]) == (3, 9)
        assert (block["type2"]["asr"]["k"], block["type2"]["asr"]["n"]) == (2, 3)
        assert block["type1"]["mcnemar"]["b"] == 4
        # three Type 1 pairs per item: the interval is the item-clustered one, Wilson kept beside it
        asr = block["type1"]["asr"]
        assert asr["interval"] == "item-clustered bootstrap" and 0 <= asr["lo"] < 4 / 9 < asr["hi"] <= 1
        assert 0 < asr["wilson_lo"] < 4 / 9 < asr["wilson_hi"] < 1
        assert block["type1"]["mcnemar"]["test"] == "cluster_mcnemar" and block["type2"]["mcnemar"]["test"] == "mcnemar_exact"
        # strata
        by_ct = res.results.models["stub-model"]["none"]["by_content_type"]
        assert by_ct["cue_remapping"]["type1"]["asr"]["p"] == 1.0
        assert by_ct["threshold_corruption"]["type1"]["asr"]["p"] == 0.0
        assert set(res.results.models["stub-model"]["none"]["by_source"]) == {"tiny", "tiny2"}
        # the second run reuses every call
        again = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(family={"type1": "all"}))
        assert again.stats.called == 0 and again.stats.cached == 20
        assert srv.stats.total == 20
        assert again.results.models == res.results.models
    md = (tmp_path / "run" / "results.md").read_text()
    assert "Type 1 ASR" in md and "44.4%" in md
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["usage"]["stub-model"]["calls"] == 20
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["prompts"]["texts"]["system"] and run["prompts"]["hash"]


def test_type1_sample_and_defense_both(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(family={"type1": "sample"}, settings=("none", "caution")))
        # per setting: 4 clean + 4 sampled Type 1 + 4 Type 2; the defense changes the system prompt
        assert res.stats.called == 2 * (4 + 4 + 4)
        m = res.results.models["stub-model"]
        assert set(m) == {"none", "caution"}
        assert m["none"]["overall"]["type1"]["asr"]["n"] == 3
    with Store(tmp_path / "run" / "store.sqlite") as st:
        systems = {json.loads(r[0])[0]["content"] for r in st.conn.execute("SELECT messages FROM requests")}
        assert len(systems) == 2 and any("misleading" in s for s in systems)


def test_clean_call_shared_by_probes_and_models(tmp_path):
    suite = make_tiny_suite(n_copies=2)
    with StubServer(policy=oracle_policy) as srv:
        a = _spec(srv.base_url)
        b = parse_model_spec(f"openai:stub-model,label=second,temperature=0.5,base_url={srv.base_url}")
        res = evaluate(suite, [a, b], tmp_path / "run", EvalOptions(family={"type1": "all"}))
        # two models with different decoding: each makes its own N + N*k + N calls
        assert res.stats.called == 2 * (8 + 24 + 8)
    with Store(tmp_path / "run" / "store.sqlite") as st:
        assert st.count("units", "WHERE condition = 'clean'") == 16
        assert st.count("calls") == 80


def test_invalid_answers_counted_not_scored(tmp_path, tiny_suite):
    def mumble(messages, request):
        return "I am not sure." if "[[ANSWER" in messages[-1]["content"] else oracle_policy(messages, request)

    with StubServer(policy=mumble) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(family={"type1": "all"}))
    block = res.results.models["stub-model"]["none"]["overall"]
    # q1's three Type 1 and q3's one marked sentence are unreadable: flips, reported as invalid
    assert block["type1"]["asr"]["k"] == 4 and block["type1"]["asr"]["invalid_flips"] == 4
    assert block["type1"]["tasr"]["k"] == 0
    assert block["type1_acc"]["invalid"] == 4
    assert res.results.models["stub-model"]["none"]["counts"]["invalid"] == 6


def test_requests_spread_over_replicas_and_rate_limited(tmp_path, tiny_suite):
    import time

    with StubServer(policy=oracle_policy) as a, StubServer(policy=oracle_policy) as b:
        spec = parse_model_spec(f"openai:stub-model,base_url={a.base_url}|{b.base_url},concurrency=8,rpm=600")
        t = time.perf_counter()
        res = evaluate(tiny_suite, [spec], tmp_path / "run", EvalOptions(family={"type1": "all"}))
        elapsed = time.perf_counter() - t
        assert res.stats.called == 20
        assert a.stats.total == b.stats.total == 10
    # 600 requests per minute = 10 per second with a one-second bucket: 20 calls need about 1 s
    assert elapsed >= 0.9


def test_token_usage_and_cost_recorded(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},price_input=2.0,price_output=8.0")
        res = evaluate(tiny_suite, [spec], tmp_path / "run", EvalOptions(family={"type1": "all"}))
    u = res.results.model_dump()["usage"]["stub-model"]
    assert u["prompt_tokens"] > 0 and u["completion_tokens"] == 2 * 20  # "Answer: X" = 2 words
    assert abs(u["cost"] - (u["prompt_tokens"] * 2.0 + u["completion_tokens"] * 8.0) / 1e6) < 1e-12
    assert res.stats.cost == u["cost"] or abs(res.stats.cost - u["cost"]) < 1e-12


def test_results_describe_the_units_this_run_planned(tmp_path, tiny_suite):
    """Two runs into one directory: the second run's results are its own units, not every unit
    stored there (the first run's extra Type 1 probes are kept in the store, not reported)."""
    from medresilience.run.results import Results

    with StubServer(policy=oracle_policy) as srv:
        evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(family={"type1": "all"}))
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(family={"type1": "sample"}))
    assert res.stats.called == 0  # every call of the second run was made by the first
    block = res.results.models["stub-model"]["none"]
    assert block["counts"]["units"] == 4 + 4 + 4 and block["overall"]["type1_acc"]["n"] == 4
    saved = Results.load(tmp_path / "run" / "results.json")
    assert saved.run.options["family"]["type1"] == "sample"
    assert saved.models == res.results.models
    with Store(tmp_path / "run" / "store.sqlite") as st:
        assert st.count("units") == 20  # the store keeps what the first run planned
    from medresilience.report import build_report

    rep = build_report([tmp_path / "run"])
    assert int(rep.headline.iloc[0]["type1_acc_n"]) == 4


def test_a_store_written_before_settings_is_migrated(tmp_path, tiny_suite):
    """A store of the earlier layout (units.defense 0/1, scores without value) opens, keeps every
    row, and reads as settings none / caution; a rerun reuses its calls."""
    import sqlite3

    with StubServer(policy=oracle_policy) as srv:
        evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
        db = tmp_path / "run" / "store.sqlite"
        con = sqlite3.connect(db)
        rows = con.execute("SELECT model, unit_id, item_id, probe_id, condition, setting, scoring, key FROM units").fetchall()
        con.executescript("""
            DROP TABLE units;
            CREATE TABLE units (model TEXT NOT NULL, unit_id TEXT NOT NULL, item_id TEXT NOT NULL, probe_id TEXT,
                condition TEXT NOT NULL, defense INTEGER NOT NULL, scoring TEXT NOT NULL, key TEXT NOT NULL,
                PRIMARY KEY (model, unit_id));
            CREATE TABLE scores_old (key TEXT NOT NULL, scorer TEXT NOT NULL, label TEXT, status TEXT NOT NULL, detail TEXT,
                PRIMARY KEY (key, scorer));
            INSERT INTO scores_old SELECT key, scorer, label, status, detail FROM scores;
            DROP TABLE scores; ALTER TABLE scores_old RENAME TO scores;
            DELETE FROM runs;""")
        old_ids = [(m, u.replace("|none|", "|nodef|").replace("|caution|", "|def|"), i, p, c, int(s == "caution"), sc, k) for m, u, i, p, c, s, sc, k in rows]
        con.executemany("INSERT INTO units VALUES (?, ?, ?, ?, ?, ?, ?, ?)", old_ids)
        con.commit()
        con.close()
        from medresilience.run.frame import results_frame

        with Store(db) as st:
            df = results_frame(st, tiny_suite)
            assert st.count("units") == 40 and set(df["setting"]) == {"none", "caution"}
            assert df["value"].isna().all() and df["correct"].sum() > 0  # correctness from the gold letter
        again = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
    assert again.stats.called == 0 and again.stats.cached == 40
    with Store(db) as st:
        assert st.count("units") == 40  # the migrated unit ids are the ones a rerun plans


def test_open_answer_mode_is_judged_and_claims_count_as_flips_to_the_target(tmp_path, tiny_suite):
    """-O answer=open: the same probes without options; a judge (the stub, scripted) reads each
    reply against the gold option's text; a reply naming the target's text is a `claim` verdict,
    which counts as a flip to the target in TASR, as a letter equal to the target does."""
    import re

    def answerer(messages, request):
        user = messages[-1]["content"]
        assert "Options:" not in user and "Answer: <your answer" in user
        i = int(re.search(r"Question number (\d+)", user).group(1))
        m = re.search(r"\[\[ANSWER:([A-D])\]\]", user)
        gold = "ABCD"[(i - 1) % 4]
        pick = m.group(1) if m else ("A" if gold != "A" else "B") if "[[CLEAN-WRONG]]" in user else gold
        return f"Thinking it over.\nAnswer: option {pick.lower()} of question {i}"

    def judge(messages, request):
        user = messages[-1]["content"]
        field = lambda name: re.search(rf"<{name}>\n(.*?)\n</{name}>", user, re.S).group(1)  # noqa: E731
        said = re.search(r"Answer: (.*)\n</answer-", user).group(1)
        verdict = "gold" if said == field("gold") else "claim" if said == field("claim") else "other"
        return f"The reply names {said!r}.\nVERDICT: {verdict}"

    with StubServer(policy=answerer) as srv, StubServer(policy=judge) as jsrv:
        opts = EvalOptions(family={"type1": "all", "answer": "open", "judge": f"openai:judge,base_url={jsrv.base_url}"})
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", opts)
        assert jsrv.stats.total == 20  # every reply judged once
    block = res.results.models["stub-model"]["none"]["overall"]
    # the same numbers as multiple choice with the oracle: q1 flips 3 times to its targets, q3 once elsewhere
    assert (block["clean_acc"]["k"], block["clean_acc"]["n"]) == (3, 4)
    assert (block["type1"]["asr"]["k"], block["type1"]["asr"]["n"]) == (4, 9)
    assert (block["type1"]["tasr"]["k"], block["type1"]["tasr"]["n"]) == (3, 9)
    assert res.results.run.options["family"]["answer"] == "open"
    with Store(tmp_path / "run" / "store.sqlite") as st:
        scorers = {r[0] for r in st.conn.execute("SELECT DISTINCT scorer FROM scores")}
    assert len(scorers) == 1 and next(iter(scorers)).startswith("judge:misleading-open-answer@")
    with StubServer(policy=answerer) as srv:
        import pytest

        from medresilience.runtime.errors import ConfigError

        with pytest.raises(ConfigError, match="judge"):
            evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "bad", EvalOptions(family={"answer": "open"}))
        assert not (tmp_path / "bad").exists()  # refused before anything is written


def test_sample_seed_draws_nested_random_samples_and_reuses_their_calls(tmp_path):
    """--sample-seed S with --limit N: the first N items of S's random order, so a larger N keeps
    a smaller sample (and its stored calls) and another seed draws another sample."""
    import random

    from medresilience.family import family_of
    from medresilience.run.runner import check_options, select_units

    suite = make_tiny_suite(n_copies=5)  # 20 items
    ids = list(suite.items)
    order = list(ids)
    random.Random(3).shuffle(order)  # the documented rule: Python's random.Random(seed).shuffle
    fam = family_of([suite.manifest.family])

    def items_of(opts: EvalOptions) -> list[str]:
        return list(dict.fromkeys(it.id for it, _ in select_units(suite, fam, check_options(fam, opts), opts)))

    assert items_of(EvalOptions(limit=6)) == ids[:6]
    assert items_of(EvalOptions(limit=6, sample_seed=3)) == order[:6] != ids[:6]
    assert items_of(EvalOptions(sample_seed=3)) == order
    assert set(items_of(EvalOptions(limit=6, sample_seed=4))) != set(order[:6])
    with StubServer(policy=oracle_policy) as srv:
        small = evaluate(suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(limit=6, sample_seed=3))
        calls_small = srv.stats.total
        assert small.stats.called == calls_small == 6 * 3  # clean, one Type 1, Type 2 per item
        big = evaluate(suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(limit=10, sample_seed=3))
        assert big.stats.cached == calls_small and big.stats.called == 4 * 3 == srv.stats.total - calls_small
        assert big.results.models["stub-model"]["none"]["overall"]["clean_acc"]["n"] == 10
        run = json.loads((tmp_path / "run" / "run.json").read_text())
        assert run["options"]["sample_seed"] == 3 and run["options"]["limit"] == 10
        # the CLI flag: the same small sample, from the store
        from typer.testing import CliRunner

        from medresilience.cli import app

        suite.save(tmp_path / "suite")
        r = CliRunner().invoke(
            app,
            [
                "eval",
                "--suite",
                str(tmp_path / "suite"),
                "--model",
                f"openai:stub-model,base_url={srv.base_url}",
                "--limit",
                "6",
                "--sample-seed",
                "3",
                "--out",
                str(tmp_path / "run"),
            ],
        )
        assert r.exit_code == 0, r.output
        assert srv.stats.total == calls_small + 4 * 3 and "0 made, 18 reused" in r.output
        assert json.loads((tmp_path / "run" / "run.json").read_text())["options"]["sample_seed"] == 3
