"""How replies are read beyond the rules: a reply cut at its token budget is `truncated` (counted
apart from `invalid`, warned about), the attack rates are also given with unread replies left out,
and an optional extraction model (`-O extract=SPEC`) reads what the rules leave unread. Every test
runs the real evaluation against the local stub server, which cuts a reply at max_tokens words and
says finish_reason "length"; the extraction model is the same stub, answering by model name."""

from __future__ import annotations

import json
import re
import socket
import sqlite3

import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, oracle_policy
from medresilience.cli import app
from medresilience.models.spec import parse_model_spec
from medresilience.report import build_report
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import ConfigError
from medresilience.scoring.letters import read_answer
from medresilience.store import ScoreRow, Store
from medresilience.testing.stub import StubServer

# a reasoning-first reply: its answer comes after 36 words, so a 16-token budget cuts it
RAMBLE = " ".join(["Let", "us", "weigh", "each", "option", "in", "turn", "before", "deciding"] * 4) + " Answer: {x}"
ALL = {"type1": "all"}


def _num(user: str) -> int:
    return int(re.search(r"Question number (\d+)", user).group(1))


def _fenced(user: str) -> str:
    return re.search(r"<reply-\w+>\n(.*)\n</reply-\w+>", user, re.S).group(1)


class Policy:
    """The answering model: q2's stressed prompts get a reasoning-first reply (cut at 16 tokens);
    q3's stressed prompts a reply the rules cannot read but a reader can ("the second one"); q1's
    Type 1 prompts a reply committing to nothing; the rest the oracle's 'Answer: X'. The model
    named `extractor` reads the fenced reply: "second" -> B, "unsure" -> none, "Answer: <X>" -> D
    (so a rule-read reply sent to it would be misread), anything else -> a chatty sentence."""

    def __init__(self):
        self.extract_requests: list[str] = []

    def __call__(self, messages, request):
        user = messages[-1]["content"]
        if request.get("model") == "extractor":
            self.extract_requests.append(user)
            body = _fenced(user)
            if "second" in body:
                return "B"
            if "unsure" in body:
                return " none. "
            if "Answer:" in body:
                return "D"
            return "I think it is B"
        num = _num(user)
        stressed = "context" in user
        if num == 2 and stressed:
            return RAMBLE.format(x="B")
        if num == 3 and stressed:
            return "Hmm, the second one."
        if num == 1 and "Additional context:" in user:
            return "I am unsure."
        if num == 4 and stressed:
            return "Well."  # q4 is answered wrong clean: not in the ASR denominator
        return oracle_policy(messages, request)


def _statuses(db) -> dict[str, int]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT status, COUNT(*) FROM scores GROUP BY status").fetchall())
    finally:
        con.close()


def test_a_reply_cut_at_its_budget_is_truncated_counted_apart_and_warned_about(tmp_path):
    suite = make_tiny_suite()
    policy = Policy()
    with StubServer(policy=policy) as srv:
        spec = parse_model_spec(f"openai:stub,base_url={srv.base_url},max_tokens=16")
        res = evaluate(suite, [spec], tmp_path / "cut", EvalOptions(family=ALL))
        roomy = parse_model_spec(f"openai:stub,base_url={srv.base_url}")  # the default budget
        wide = evaluate(suite, [roomy], tmp_path / "roomy", EvalOptions(family=ALL))
    block = res.results.models["stub"]["none"]
    # q2: 3 Type 1 probes and 1 Type 2 cut before their answer; q1's Type 1 and q3's and q4's stressed replies are unread
    assert block["counts"]["truncated"] == 4
    assert block["counts"]["invalid"] == 3 + 4 + 4
    assert _statuses(tmp_path / "cut" / "store.sqlite")["truncated"] == 4
    t1 = block["overall"]["type1"]
    # clean-correct pairs: q1, q2, q3 (3 Type 1 probes each); every stressed reply of theirs is unread
    assert (t1["asr"]["k"], t1["asr"]["n"], t1["asr"]["truncated_flips"], t1["asr"]["invalid_flips"]) == (9, 9, 3, 6)
    # with unread replies left out no pair is left: the rate says so (n = 0), it is never 0%
    assert (t1["asr_read"]["k"], t1["asr_read"]["n"], t1["asr_read"]["p"]) == (0, 0, None)
    assert block["overall"]["type1_acc"]["truncated"] == 3 and block["overall"]["type2_acc"]["truncated"] == 1
    # the run warns, naming the budget and the setting that raises it
    assert len(res.warnings) == 1
    assert "4 of 20 replies (20%)" in res.warnings[0] and "budget of 16 tokens" in res.warnings[0]
    assert "max_tokens=N in the model spec" in res.warnings[0]
    reading = res.results.reading["stub"]["none"]
    assert (reading["replies"], reading["read"], reading["truncated"], reading["budget"]) == (20, 5, 4, 16)
    # results.json and results.md carry them
    saved = json.loads((tmp_path / "cut" / "results.json").read_text())
    assert saved["warnings"] == res.warnings and saved["models"]["stub"]["none"]["counts"]["truncated"] == 4
    md = (tmp_path / "cut" / "results.md").read_text()
    assert "| Errors | Invalid | Truncated |" in md and "> warning: model stub" in md
    assert "Type 1 ASR, unread left out" in md and "## How replies were read" in md
    # under the default budget (512) the same replies are read: nothing truncated, no warning, q2's flips are real
    wb = wide.results.models["stub"]["none"]
    assert wb["counts"]["truncated"] == 0 and not wide.warnings
    assert wb["overall"]["type1"]["asr_read"]["n"] == 3  # q2's three Type 1 replies, read (B)


def test_the_report_shows_truncated_replies_and_the_rates_without_unread_ones(tmp_path):
    suite = make_tiny_suite()
    with StubServer(policy=Policy()) as srv:
        spec = parse_model_spec(f"openai:stub,base_url={srv.base_url},max_tokens=16")
        evaluate(
            suite,
            [spec],
            tmp_path / "run",
            EvalOptions(family=ALL),
        )
    suite.save(tmp_path / "run" / "suite")  # the report recomputes from the store and the suite
    rep = build_report([tmp_path / "run"])
    html = rep.html.read_text()
    assert "How replies were read" in html and "Truncated" in html
    assert "Type 1 ASR, unread left out" in html
    assert "were cut at their token budget of 16 tokens" in html  # the warning, above the numbers
    flips = pd.read_csv(rep.tables["flips"]["csv"])
    ov = flips[(flips["stratum_kind"] == "overall") & (flips["condition"] == "type1")].iloc[0]
    assert (int(ov["truncated"]), int(ov["invalid"]), int(ov["elsewhere"])) == (3, 6, 0)
    reading = pd.read_csv(rep.tables["reading"]["csv"]).iloc[0]
    assert (int(reading["replies"]), int(reading["truncated"]), int(reading["budget"])) == (20, 4, 16)
    md = rep.markdown.read_text()
    assert "## How replies were read" in md


def test_cli_table_shows_truncated_and_the_warning(tmp_path):
    suite = make_tiny_suite()
    suite.save(tmp_path / "suite")
    with StubServer(policy=Policy()) as srv:
        r = CliRunner().invoke(
            app,
            [
                "eval",
                "--suite",
                str(tmp_path / "suite"),
                "--model",
                f"openai:stub,base_url={srv.base_url},max_tokens=16",
                "--out",
                str(tmp_path / "run"),
                "-O",
                "type1=all",
            ],
        )
    assert r.exit_code == 0, r.output
    assert re.search(r"Truncated\s*│\s*4", r.output), r.output
    assert "Type 1 ASR, unread left out" in r.output
    assert "warning: model stub: 4 of 20 replies" in r.output


def test_an_extraction_model_reads_only_what_the_rules_leave_unread(tmp_path):
    suite = make_tiny_suite()
    policy = Policy()
    with StubServer(policy=policy) as srv:
        spec = parse_model_spec(f"openai:stub,base_url={srv.base_url},max_tokens=16")
        ex = parse_model_spec(f"openai:extractor,base_url={srv.base_url}")
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=ALL, extract=ex))
        asked = list(policy.extract_requests)
        again = evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=ALL, extract=ex))
    # asked only about the complete replies the rules could not read: q1's 3 Type 1, q3's 3 Type 1 + 1 Type 2,
    # q4's 3 Type 1 + 1 Type 2; never about a truncated reply (q2) nor a rule-read one (its 'Answer: X' would read D)
    bodies = [_fenced(u) for u in asked]
    assert len(asked) == 11
    assert sorted(set(bodies)) == ["Hmm, the second one.", "I am unsure.", "Well."]
    assert not any("Answer:" in b or "weigh" in b for b in bodies)
    # the options are shown; the question is not (the extraction model reads, it does not answer)
    assert re.search(r"Options:\nA\. option a of question \d\nB\. ", asked[0])
    assert "Question number" not in asked[0]
    block = res.results.models["stub"]["none"]
    # q3's four replies read as B by the extraction model; q1's "none" and q4's chatty verdicts stay unread
    assert (block["counts"]["invalid"], block["counts"]["truncated"]) == (3 + 4, 4)
    t1 = block["overall"]["type1"]
    assert (t1["asr"]["k"], t1["asr"]["n"]) == (9, 9)  # q3's gold is C: B is a flip, now a read one
    assert (t1["asr_read"]["k"], t1["asr_read"]["n"]) == (3, 3)
    reading = res.results.reading["stub"]["none"]
    assert (reading["read"], reading["extracted"], reading["extracted_share"]["n"]) == (9, 4, 9)
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    rows = con.execute(
        "SELECT s.label, s.status, s.detail FROM units u JOIN scores s ON s.key = u.key AND s.scorer = u.scoring "
        "WHERE u.condition != 'clean' AND u.item_id IN ('q1', 'q3', 'q4')"
    ).fetchall()
    scorers = {r[0] for r in con.execute("SELECT DISTINCT scoring FROM units")}
    con.close()
    assert len(scorers) == 1 and next(iter(scorers)).startswith("letter+extract:extractor#")  # units of their own
    details = [d for _, _, raw in rows if raw is not None and "read_by" in (d := json.loads(raw))]
    assert len(details) == 11  # the rule-read q1 Type 2 reply carries no extraction detail, only how the rules read it
    assert any(json.loads(raw) == {"read": "an answer: Answer: C"} for _, _, raw in rows if raw is not None)
    assert sum(1 for label, st, _ in rows if (label, st) == ("B", "valid")) == 4
    assert all(d["read_by"] == "extract" for d in details)
    reasons = sorted({d.get("reason", "") for d in details} - {""})
    assert reasons == ["the extraction model read no option in the reply (none)", "the extraction model's reply is not one label or none: 'I think it is B'"]
    # stored and resumed like every call: the same run again makes no call and gives the same numbers
    assert again.stats.called == 0 and len(policy.extract_requests) == 11
    assert again.results.models == res.results.models and again.results.reading == res.results.reading


def test_a_failed_extraction_call_is_unscored_and_retried_by_the_next_run(tmp_path):
    suite = make_tiny_suite()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    policy = Policy()
    with StubServer(policy=policy) as srv:
        spec = parse_model_spec(f"openai:stub,base_url={srv.base_url},max_tokens=16")
        down = parse_model_spec(f"openai:extractor,base_url=http://127.0.0.1:{dead}/v1,max_retries=0,timeout=5")
        first = evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=ALL, extract=down))
        counts = first.results.models["stub"]["none"]["counts"]
        assert first.stats.errors == 11 and counts["unscored"] == 11 and counts["invalid"] == 0
        assert first.results.reading["stub"]["none"]["extracted"] == 0
        up = parse_model_spec(f"openai:extractor,base_url={srv.base_url}")
        second = evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=ALL, extract=up))
    assert second.stats.called == 11 and len(policy.extract_requests) == 11  # the answers are reused, the readings retried
    counts = second.results.models["stub"]["none"]["counts"]
    assert (counts["unscored"], counts["invalid"]) == (0, 7) and second.results.reading["stub"]["none"]["extracted"] == 4


def test_extraction_is_refused_where_replies_are_not_read_as_letters(tmp_path):
    suite = make_tiny_suite()
    ex = parse_model_spec("openai:extractor,base_url=http://127.0.0.1:9/v1")
    spec = parse_model_spec("openai:stub,base_url=http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="needs --scoring letter"):
        evaluate(suite, [spec], tmp_path / "a", EvalOptions(scoring="logprob", extract=ex))
    with pytest.raises(ConfigError, match="does not read option letters"):
        evaluate(suite, [spec], tmp_path / "b", EvalOptions(family={"answer": "open", "judge": "openai:j,base_url=http://127.0.0.1:9/v1"}, extract=ex))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing half-written
    other = parse_model_spec("openai:other-model,label=stub,base_url=http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="not the answering model"):
        evaluate(suite, [spec], tmp_path / "c", EvalOptions(extract=other))


def test_cli_takes_extract_as_a_run_option(tmp_path):
    suite = make_tiny_suite()
    suite.save(tmp_path / "suite")
    policy = Policy()
    with StubServer(policy=policy) as srv:
        args = [
            "eval",
            "--suite",
            str(tmp_path / "suite"),
            "--model",
            f"openai:stub,base_url={srv.base_url},max_tokens=16",
            "--out",
            str(tmp_path / "run"),
            "-O",
            "type1=all",
        ]
        r = CliRunner().invoke(app, [*args, "-O", f"extract=openai:extractor,base_url={srv.base_url}"])
        assert r.exit_code == 0, r.output
        assert re.search(r"Read by extraction model\s*│\s*44\.4%", r.output), r.output
        empty = CliRunner().invoke(app, [*args, "-O", "extract="])
    assert empty.exit_code == 2 and "name the extraction model" in empty.output
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    assert config["options"]["extract"]["model"] == "extractor" and "extract" not in config["options"]["family"]


def test_a_store_from_before_truncated_is_migrated_in_place(tmp_path):
    db = tmp_path / "store.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""CREATE TABLE scores (key TEXT NOT NULL, scorer TEXT NOT NULL, label TEXT,
        status TEXT NOT NULL CHECK (status IN ('valid', 'invalid', 'unscored')), detail TEXT, value REAL, PRIMARY KEY (key, scorer));
        INSERT INTO scores VALUES ('k1', 'letter', 'A', 'valid', NULL, 1.0);""")
    con.commit()
    with pytest.raises(sqlite3.IntegrityError):
        con.execute("INSERT INTO scores VALUES ('k2', 'letter', NULL, 'truncated', NULL, NULL)")
    con.close()
    with Store(db) as store:
        store.write_results([], [ScoreRow("k2", "letter", None, "truncated", {"reason": "cut"})])
        assert store.score("k1", "letter") == {"status": "valid", "label": "A", "detail": None, "value": 1.0}
        assert store.score("k2", "letter")["status"] == "truncated"


def test_a_cut_reply_with_nothing_to_score_is_truncated_in_the_frame_and_the_reading(tmp_path):
    """A family may store no score for a reply with nothing in it to score (noise diagnosis mode: no
    final diagnosis, so no judge call): the frame reads it as invalid, or truncated when it was cut."""
    from medresilience.run.frame import results_frame
    from medresilience.run.reading import reading_summary
    from medresilience.store import CallRow, UnitRow

    suite = make_tiny_suite()
    with Store(tmp_path / "store.sqlite") as store:
        store.record_run("r1", {})
        units = [UnitRow("m", f"q{i}|clean|none|judge", f"q{i}", None, "clean", "none", "judge", f"k{i}") for i in (1, 2, 3)]
        store.add_plan(units, [(f"k{i}", "m", [], {"max_tokens": 64}) for i in (1, 2, 3)])
        store.write_results(
            [
                CallRow("k1", "m", "ok", text="The patient most likely has", finish_reason="length"),
                CallRow("k2", "m", "ok", text="I do not know.", finish_reason="stop"),
                CallRow("k3", "m", "ok", text="FINAL DIAGNOSIS: x", finish_reason="stop"),
            ],
            [ScoreRow("k3", "judge", "1", "valid", None, 1.0)],
        )
        df = results_frame(store, suite)
        assert dict(zip(df["item_id"].astype(str), df["status"].astype(str))) == {"q1": "truncated", "q2": "invalid", "q3": "valid"}
        b = reading_summary(store)["m"]["none"]
        assert (b["replies"], b["read"], b["invalid"], b["truncated"], b["budget"]) == (3, 1, 1, 1, 64)


KO_OPTIONS = {"1": "방사선치료", "2": "전체위절제술", "3": "항암화학요법", "4": "퀘티아핀", "5": "내시경점막밑절제술"}


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("따라서 퀘티아핀을 선택하는 것이 적절합니다.", "4"),
        ("현재 치료로는 전체 위절제술이 가장 적절한 선택으로 보입니다.", "2"),  # spacing differs from the option's text
        ("퀘티아핀을 선택하는 것이 적절하지 않습니다.", None),  # the claim denied
        ("전체 위절제술이 가장 적절한 치료는 아닙니다.", None),
        ("방사선치료와 항암화학요법을 함께 선택하는 것이 적절합니다.", None),  # two options' texts
    ],
)
def test_a_korean_claim_names_an_option_by_its_text(reply, expected):
    assert read_answer(reply, "12345", KO_OPTIONS).label == expected


TRIALS = {"A": "Trial A", "B": "Trial B", "C": "Neither trial"}


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("Trial A enrolls older adults; trial B excludes renal failure.\n\nTherefore, I would enroll this patient in **Trial A**.", "A"),
        ("Both have merits. Therefore, I would not enroll this patient in Trial A.", None),  # denied
        ("Both have merits. Therefore, Trial A or Trial B could work.", None),  # two options
        ("Her age matters; Trial A might fit, but I cannot say more.", None),  # no concluding sentence
    ],
)
def test_a_concluding_sentence_that_names_one_option_by_its_text_is_read(reply, expected):
    got = read_answer(reply, "ABC", TRIALS)
    assert got.label == expected
    if expected:
        assert "concluding sentence" in got.how


AIRWAY = {"A": "Airway epithelial shedding", "B": "Airway remodeling", "C": "Airway inflammation", "D": "Airway hyperresponsiveness"}


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("The history fits asthma. Airway inflammation is most likely to be associated with the loss of control.", "C"),
        ("Airway inflammation is not the most likely cause here. Airway remodeling is the most likely cause.", "B"),
        ("Airway inflammation is the most likely cause. Wait, actually airway remodeling is the best answer.", "B"),  # revised
        ("Airway inflammation is the most likely cause, and airway remodeling is the best answer too.", None),  # two claims
        ("If she had smoked, airway remodeling would be the most likely cause.", None),  # counterfactual
        ("Some argue airway inflammation is the most likely cause, but that is wrong.", None),  # not the whole subject
    ],
)
def test_a_sentence_whose_subject_is_an_option_text_claims_it(reply, expected):
    assert read_answer(reply, "ABCD", AIRWAY).label == expected


FETAL = {"A": "Fetal hydrocephalus", "B": "Partial molar pregnancy", "C": "Neural tube defect", "D": "Trisomy 18"}
ECHO = "A) Fetal hydrocephalus\nB) Partial molar pregnancy\nC) Neural tube defect\nD) Trisomy 18"


@pytest.mark.parametrize(
    "reply, expected",
    [
        (f"{ECHO}\n\nC) Neural tube defect", "C"),  # the option list echoed, then the answer line
        (f"{ECHO}\n", None),  # only the echo: no answer
        ("A. Fetal hydrocephalus - no\nB. Partial molar pregnancy - yes\nC. Neural tube defect - no\nD. Trisomy 18 - no", "B"),  # a verdict list is no echo
    ],
)
def test_an_echo_of_the_option_list_states_no_answer(reply, expected):
    assert read_answer(reply, "ABCD", FETAL).label == expected


# The cases below are excerpts of real replies in tests/data/replies/mcq_d.jsonl (MedAgentsBench).


@pytest.mark.parametrize(
    "reply, expected",
    [
        # d-0094 (QwQ-32B): cut off while double-checking; "So D is correct" is scratch work
        (
            "<think>\nOption D: TE speech requires a surgically created puncture. So D is correct.\n\nLet me double-check each point. For A, esophageal speech uses air from the esophagus, not lungs directly. So",
            None,
        ),
        # d-0088 (QwQ-32B): the options listed inside an unfinished thought
        (
            "<think>\nThe question is a bit ambiguous. Wait, the options are (A) yes (B) no (C) maybe. The study states that HER2 was significant in univariate analysis, so the answer might be yes",
            None,
        ),
        # the same thought closed, then answered: the answer after it stands
        ("<think>\nSo D is correct. Let me double-check each point.\n</think>\n\nD", "D"),
    ],
)
def test_a_reply_cut_off_inside_its_reasoning_states_no_answer(reply, expected):
    got = read_answer(reply, "ABCD")
    assert got.label == expected
    if expected is None:
        assert "never closed" in got.how


@pytest.mark.parametrize(
    "reply, expected",
    [
        # d-0132: three labelled options after "Answer:" for a one-answer item
        (
            "Answer: (A) IRV (Inspiratory Reserve Volume), (B) ERV (Expiratory Reserve Volume), (D) TV (Tidal Volume) \n\n(Note: VC is the sum of IRV, ERV, and TV.)",
            None,
        ),
        # d-0127, d-0119: one labelled option whose text has commas or a colon
        ("Answer: (C) OPV 3 doses, 1 IPV, 3 Pentavalent and 2 measles", "C"),
        (
            "Answer: (A) Ball-and-socket joint: The head of the joint is ball-shaped and the socket is deep and concave, allowing for the greatest range of motion.",
            "A",
        ),
    ],
)
def test_labelled_options_listed_after_the_answer_are_a_hedge(reply, expected):
    assert read_answer(reply, "ABCD").label == expected


@pytest.mark.parametrize(
    "reply, expected",
    [
        # d-0053: a qualified answer phrase ending in "is:", the label opening the next line
        (
            "(A) Optic disk: Lesions at the optic disk typically cause central scotomas.\n\n(B) Optic chiasma: Lesions here cause bitemporal hemianopia.\n\n(C) Lateral geniculate body: Lesions here can cause a keyhole-shaped defect.\n\n"
            "However, the closest association is the optic disk.\n\nTherefore, the best possible answer from the given options is:\n\n(A) Optic disk",
            "A",
        ),
        # d-0065: a content noun with an inserted clause
        (
            "- **(I) Meniere disease with right-sided predominance**: Not described here.\n- **(J) Eustachian tube dysfunction affecting the right ear**: Less likely given the debris.\n\n### Conclusion:\nThe most probable diagnosis, considering the physical findings and tuning fork test results, is:\n**(A) Bilateral cerumen impaction with greater severity on the right**\n\nThis diagnosis explains the conductive hearing loss.",
            "A",
        ),
        # d-0064: a per-option list marking three options correct, then the answer it settles on
        (
            "Now, let's summarize the findings:\n- (A) is correct for vocal fold paralysis.\n- (B) is likely incorrect for fry phonation.\n- (C) is correct for falsetto.\n- (D) is correct for adductor spasmodic dysphonia.\n\n"
            "Given that the question asks for the correct interpretation, the most definitive answer based on the analysis is:\n\n**A**: In vocal fold paralysis, the glottal closure index is smaller.",
            "A",
        ),
        # d-0165, d-0174: a superlative subject other than "answer" or a clinical noun, after a per-option review
        (
            "   - (A) Restart rosuvastatin at a lower dose: possible, but symptoms were significant.\n   - (D) Initiate fish oils: mainly lowers triglycerides.\n\n"
            "Based on this analysis, the best course of action is:\n\n(C) Initiate a different statin",
            "C",
        ),
        (
            "(A) Speaking loudly as if shouting: This does not relate to the accent method.\n\n(D) Singing while performing a lip trill: This can be related to the accent method.\n\n"
            "After analyzing all the options, the most relevant activity related to the accent method is:\n\n**D** - Singing while performing a lip trill.",
            "D",
        ),
        # the phrase names two options on the next lines: a hedge
        ("The most likely diagnosis, given the findings, is:\n(B) Gout\n(C) Pseudogout", None),
    ],
)
def test_an_answer_phrase_ending_in_is_colon_reads_the_label_on_the_next_line(reply, expected):
    assert read_answer(reply, "ABCDEFGHIJ").label == expected


@pytest.mark.parametrize(
    "reply, expected",
    [
        # d-0057: several "correct statements" listed one per line, then the single best answer
        (
            "After analyzing all the options, the correct statements are:\n\n- (A) It has an articular disc of fibrocartilage.\n- (D) Proprioceptive information is carried by the masseteric and auriculotemporal nerves.\n- (G) Its articular surfaces are covered by fibrocartilage.\n\n"
            "Since the question asks for the true statement, the best answer is:\n\n(D) Proprioceptive information is carried by the masseteric and auriculotemporal nerves.",
            "D",
        ),
        # the same list with no single answer after it
        (
            "After analyzing all the options, the correct statements are:\n\n- (A) It has an articular disc of fibrocartilage.\n- (D) Proprioceptive information is carried by the masseteric nerve.",
            None,
        ),
        # a-0115: "(J) is correct" early, then narrowed to three and cut off
        (
            "The joints are connected by a membrane, so (J) is correct. The exoskeleton does not split, eliminating (I). The remaining options are (D), (F), and (G). The muscular system is responsible for movement.",
            None,
        ),
    ],
)
def test_a_plural_answer_is_a_hedge_however_its_labels_are_laid_out(reply, expected):
    assert read_answer(reply, "ABCDEFGHIJ").label == expected


BLINDNESS = {"A": "Trachoma", "B": "Onchocerciasis", "C": "Vitamin A deficiency", "D": "Glaucoma", "E": "Cataracts"}
FAITHS = {"A": "Tao", "B": "Jewish", "C": "Hindu", "D": "Baha'i", "E": "Islam", "F": "Zoroastrianism", "G": "Sikhism"}


@pytest.mark.parametrize(
    "reply, options, expected",
    [
        # b-0306: the subject is an option's whole text, "the leading cause"
        (
            "Explanation: \nTrachoma is the leading cause of blindness in Africa. Trachoma is an infection of the eye caused by Chlamydia trachomatis.",
            BLINDNESS,
            "A",
        ),
        # c-0163: the last sentence naming an option ends with its text, after a copula
        (
            "This question is about cultural practices and beliefs, not medical facts.  \n\nThe practice of very rapid disposal of the body before sundown on the day of death is most closely associated with **Zoroastrianism**. \n\n\nLet me know if you have any other questions!",
            FAITHS,
            "F",
        ),
        ("The practice is most closely associated with Zoroastrianism. Islam also buries quickly.", FAITHS, None),  # a later sentence names another
        ("The practice might be associated with Zoroastrianism.", FAITHS, None),  # a doubt
        ("The practice is not associated with Zoroastrianism.", FAITHS, None),  # a denial
    ],
)
def test_an_english_sentence_that_claims_one_option_by_its_text_is_read(reply, options, expected):
    assert read_answer(reply, "ABCDEFGHIJ"[: len(options)], options).label == expected


PERTUSSIS = {"1": "백일해", "2": "흡인폐렴", "3": "세기관지염", "4": "클라미디아폐렴", "5": "리노바이러스폐렴"}
URTICARIA = {"1": "물사마귀", "2": "혈관부종", "3": "접촉피부염", "4": "피부그림증", "5": "콜린두드러기"}
URINE = {"1": "경과관찰", "2": "콩팥 생검", "3": "콩팥 초음파", "4": "소변검사 재검", "5": "소변 단백질전기이동"}
GALLBLADDER = {"1": "경과관찰", "2": "항암화학치료", "3": "온쓸개관절제술", "4": "이자샘창자절제술", "5": "간쐐기절제술 및 림프절절제술"}
VARICES = {"1": "라니티딘", "2": "락툴로오스", "3": "세프트리악손", "4": "분지쇄아미노산", "5": "우르소데옥시콜산"}


@pytest.mark.parametrize(
    "reply, options, expected",
    [
        # c-0105: "X(pertussis)는 ... 일치합니다" (X is consistent with the findings)
        (
            "혈액검사 결과는 백혈구 수치가 높고 림프구가 증가하여 있습니다. 백일해(pertussis)는 이러한 임상 증상과 혈액검사 결과와 일치합니다. 백일해는 초기에는 감기 증상과 비슷하다가 급격히 발작적인 기침 증상이 나타납니다.",
            PERTUSSIS,
            "1",
        ),
        # c-0115: "이러한 증상은 X의 전형적인 특징입니다" (the typical feature of X)
        (
            "발진은 1~2시간 후에 저절로 사라집니다. 이러한 증상은 콜린두드러기의 전형적인 특징입니다. 나머지 선택지는 환자의 증상 및 발진의 형태와 맞지 않습니다.",
            URTICARIA,
            "5",
        ),
        # c-0117: "X은 ... 도움이 됩니다" (X helps)
        (
            "이러한 경우 혈역학적 안정화를 위해 항생제의 투여가 권장됩니다. 세프트리악손은 이러한 목적을 위해 사용되는 항생제로, 감염을 예방하고 출혈을 멈추는데 도움이 됩니다. 다른 선택지들은 출혈과 직접 관련이 없습니다.",
            VARICES,
            "3",
        ),
        # c-0108: the option's words with particles and endings glued on ("소변검사를 재검하는" for "소변검사 재검")
        (
            "소변 비중이 높으면서 단백질이 검출되는 경우 일시적인 요인일 가능성이 있으므로 이를 결정하기 위해 먼저 소변검사를 재검하는 것이 적절합니다. 재검사 결과에 따라 다음 단계로 진단을 이어나가는 것이 바람직합니다.",
            URINE,
            "4",
        ),
        # c-0112: the option's text takes the copula; a negation in a later clause ("퍼지지 않았는지") is not about it
        (
            "가장 적합한 선택은 종양이 쓸개바닥에 위치하고 있으므로 간쐐기절제술 및 림프절절제술입니다, 이는 종양이 더 이상 퍼지지 않았는지 확인하고, 남아 있는 암세포를 제거하기 위한 조치입니다.",
            GALLBLADDER,
            "5",
        ),
        ("가장 적합한 선택은 간쐐기절제술 및 림프절절제술이 아닙니다.", GALLBLADDER, None),  # the copula clause denies
        ("먼저 소변검사를 재검하는 것은 적절하지 않습니다.", URINE, None),  # the endorsement denied
        ("백일해는 이러한 임상 증상과 일치하지 않습니다.", PERTUSSIS, None),  # denied
        ("백일해는 이러한 증상과 일치합니다. 세기관지염도 이러한 증상과 일치합니다.", PERTUSSIS, None),  # two options endorsed
    ],
)
def test_a_korean_sentence_endorsing_one_option_by_its_text_is_read(reply, options, expected):
    got = read_answer(reply, "12345", options)
    assert got.label == expected
    if expected:
        assert "Korean sentence" in got.how


JMLE = {"A": "Rorschachテスト", "B": "田中・Binet知能検査", "C": "津守・稲毛式発達検査", "D": "Wechsler成人知能検査", "E": "簡易精神症状評価尺度"}


@pytest.mark.parametrize(
    "reply, letters, options, expected",
    [
        ("The answer is not Metformin.", "ABCD", {"A": "Metformin", "B": "Insulin", "C": "Diet", "D": "Exercise"}, None),
        ("The answer is Metformin.", "ABCD", {"A": "Metformin", "B": "Insulin", "C": "Diet", "D": "Exercise"}, "A"),
        # a negation inside the option's own text is the option's
        (
            "Answer: No remarkable physical exam finding",
            "ABCD",
            {"A": "Globular uterus", "B": "Irregular uterus", "C": "Tender adnexa", "D": "No remarkable physical exam finding"},
            "D",
        ),
        ("가장 적합한 선택은 간쐐기절제술 및 림프절절제술이 아닙니다.", "12345", GALLBLADDER, None),
        ("따라서 정답은 간쐐기절제술 및 림프절절제술입니다.", "12345", GALLBLADDER, "5"),
    ],
)
def test_an_option_text_named_after_an_answer_cue_to_deny_it_is_no_answer(reply, letters, options, expected):
    got = read_answer(reply, letters, options)
    assert got.label == expected
    if expected is None:
        assert "no single option" in got.how


def test_a_last_line_ending_in_a_colon_introduces_and_does_not_answer():
    # d-0144 (gemma-3-1b, stored clipped): the answer "e" first, then an explanation cut at a list heading
    reply = "e\n\n解説：\n\n患者さんの症状は認知機能低下と診断されることが多いです。\n\n*   **簡易精神症状評価尺度:** 認知機能の低下を評価するのに役立ちます。\n*   **田中・Binet知能検査:*"
    assert read_answer(reply, "ABCDE", JMLE).label == "E"
    assert read_answer("The findings point to an intelligence test.\n田中・Binet知能検査", "ABCDE", JMLE).label == "B"  # a last line that is an option's text


ABDOMEN = "    *   **A) IV fluids:** Fluids alone are not enough here.\n    *   **B) CT abdomen:** Delaying surgery for a CT scan is not the best course of action.\n    *   **C) Morphine:** It is not the priority in this situation.\n"


@pytest.mark.parametrize(
    "reply, letters, expected",
    [
        # a-0144 (medXpertQA): every option discussed, one line endorses, the others reject; cut in the conclusion
        (
            ABDOMEN
            + "    *   **D) Exploratory laparotomy:** Given the hemodynamic instability, an exploratory laparotomy is the most appropriate next step.\n\n**Conclusion:** The patient's condition requires immediate surgical intervention to",
            "ABCD",
            "D",
        ),
        # the same discussion cut off before the last option (a-0151): nothing concluded
        (
            ABDOMEN + "    *   **D) Exploratory laparotomy:** Given the hemodynamic instability, an exploratory laparotomy is the most appropriate next step.",
            "ABCDE",
            None,
        ),
        # two lines endorse: no single option
        (
            ABDOMEN.replace("It is not the priority", "Morphine is the best first step")
            + "    *   **D) Exploratory laparotomy:** It is the most appropriate next step.",
            "ABCD",
            None,
        ),
    ],
)
def test_the_one_option_a_complete_per_option_discussion_endorses_is_read(reply, letters, expected):
    assert read_answer(reply, letters).label == expected


def test_an_answer_field_whose_quotes_are_escaped_several_times_is_read():
    # b-0120 (MedRAG-style JSON stored inside a JSON string): the field's quotes carry three backslashes
    reply = '{"step_by_step_thinking": "... it is not a TNF inhibitor, but rather an IL-6 receptor antagonist. Therefore, the correct answer is:\\n\\n{\\\\\\"answer_choice\\\\\\": \\"B\\\\\\"}\\n"}'
    got = read_answer(reply, "AB")
    assert got.label == "B" and got.how.startswith("an answer field")
    assert read_answer('{"answer_choice": "B"}', "AB").label == "B"


def test_a_terse_reply_is_read_at_once_as_every_rule_reads_it():
    """`read_answer` reads a reply that is only a label or "Answer: " and a label without running
    every rule; wherever it does, the label and the how are what every rule gives (`full_reading`),
    over labels A-Z in the spellings below, option sets that could be confused with a label (blood
    groups, a text "Answer", yes/no/maybe) and every real reply of tests/data/replies."""
    from conftest import TESTS
    from medresilience.scoring.letters import full_reading, terse_answer

    spellings = ["{}", "{}.", "Answer: {}", "Answer:{}", "Answer: {}.", "  {}  ", "\n{}\n", "Answer:  {}.\n", "Answer: {} ", "Answer: {}.\n\n"]
    texts = [s.format(lab) for lab in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcd" for s in spellings]
    fired = 0
    for letters in ("ABCD", "ABCDE", "ABCDEFGHIJ", "ABC"):
        option_sets = [None, {k: f"option {k} text" for k in letters}]
        option_sets += [dict(zip(letters, ts)) for ts in (["I", "A", "Answer", "B", "none"], ["B", "A", "AB", "O", "E"], ["Yes", "No", "Maybe"])]
        for options in option_sets:
            for text in texts:
                quick = terse_answer(text, letters, options)
                if quick is not None:
                    fired += 1
                    assert (quick.label, quick.how) == (full_reading(text, letters, options).label, full_reading(text, letters, options).how), (text, options)
    assert fired > 500
    assert terse_answer("B", "ABCD", {"A": "A", "B": "AB", "C": "B", "D": "O"}) is None  # "B" could be option C's text
    real = 0
    for path in sorted((TESTS / "data" / "replies").glob("mcq_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            letters = "".join(r["letters"])
            quick = terse_answer(r["reply"], letters, r.get("option_texts"))
            if quick is not None:
                real += 1
                full = full_reading(r["reply"], letters, r.get("option_texts"))
                assert (quick.label, quick.how) == (full.label, full.how), r["id"]
    assert real >= 20
