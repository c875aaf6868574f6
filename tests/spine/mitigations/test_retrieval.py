"""The retrieval setting and its corpus index: building (JSON lines, text folders, PubMedQA),
chunking, the manifest, BM25 order checked against a hand-written FTS5 query, user text that
would be FTS5 syntax, refusing answer keys (suites, benchmark and release files, and the gold text
at query time), and an end-to-end run of the bundled sample suite under `none` and `retrieval`
against the stub server (paired by item, resumed with zero calls), through the library and the
command line."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA
from medresilience import mitigations
from medresilience.cli import app
from medresilience.corpus import CorpusIndex, build_index, chunk, contains, fts_string, match_expression, query_terms
from medresilience.mitigations.retrieval import EVIDENCE_HEAD, NO_EVIDENCE, gold_texts
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item
from medresilience.run.bundled_suite import sample_release_path, sample_suite, sample_suite_dir
from medresilience.run.evaluation import evaluate
from medresilience.run.frame import results_frame
from medresilience.run.runner import EvalOptions, plan
from medresilience.runtime.errors import ConfigError, InputError
from medresilience.store import Store
from medresilience.testing.stub import StubServer

SHARED = SHARED_DATA
PUBMEDQA = SHARED / "pubmedqa" / "test_set_half.json"
MEDQA = SHARED / "medqa" / "us_4options_test_even.jsonl"

LONG_WORDS = [f"w{i:04d}" for i in range(450)]
PASSAGES = [
    {
        "id": "p-dm",
        "title": "Diagnosing diabetes",
        "text": "Diabetes mellitus is diagnosed by a fasting plasma glucose of 126 mg/dL or higher on two occasions, or by an HbA1c of 6.5 percent or more.",
    },
    {
        "id": "p-leak",
        "title": "Glucose thresholds",
        "text": "The fasting plasma glucose threshold for diabetes is 126 mg/dL (7.0 mmol/L) confirmed on repeat testing.",
    },
    {
        "id": "p-htn",
        "title": "Hypertension drugs",
        "text": "First-line drugs for hypertension include thiazide diuretics, ACE inhibitors, angiotensin receptor blockers and calcium channel blockers.",
    },
    {
        "id": "p-asthma",
        "title": "Asthma relief",
        "text": "A short-acting beta agonist such as salbutamol relieves acute asthma symptoms; inhaled corticosteroids control persistent asthma.",
    },
    {
        "id": "p-stroke",
        "title": "Stroke thrombolysis",
        "text": "Intravenous alteplase for ischaemic stroke is given within 4.5 hours of symptom onset once haemorrhage is excluded by imaging.",
    },
    {
        "id": "p-hypo",
        "title": "Hypoglycaemia",
        "text": "Hypoglycaemia in diabetes is treated with fast-acting glucose; glucagon is given when the patient cannot swallow.",
    },
    {"id": 7, "text": "Anaphylaxis is treated first with intramuscular adrenaline into the anterolateral thigh."},
    {"id": "p-long", "title": "A long handbook chapter", "text": " ".join(LONG_WORDS)},
]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", PASSAGES)


@pytest.fixture
def index(tmp_path, corpus) -> Path:
    out = tmp_path / "corpus.sqlite"
    build_index(corpus, out)
    return out


def direct(index_path: Path, expression: str, k: int) -> list[tuple[str, int]]:
    """The top k (doc id, chunk) of a bare FTS5 query, written here without the library."""
    conn = sqlite3.connect(index_path)
    try:
        return [
            (r[0], r[1])
            for r in conn.execute(
                "SELECT p.doc_id, p.chunk FROM passages_fts f JOIN passages p ON p.rowid = f.rowid WHERE passages_fts MATCH ? "
                "ORDER BY bm25(passages_fts), f.rowid LIMIT ?",
                (expression, k),
            )
        ]
    finally:
        conn.close()


# ------------------------------------------------------------------ building and the manifest


def test_index_of_a_jsonl_corpus_and_its_manifest(tmp_path, corpus, index):
    with CorpusIndex(index) as idx:
        m = idx.manifest
        assert m["format"] == "medres-corpus-index" and m["tokenizer"] == "porter unicode61 remove_diacritics 2"
        assert m["chunking"] == {"unit": "whitespace-separated words", "words": 200, "overlap": 40}
        # 7 short documents (one passage each) and the 450-word one in 3 passages
        assert m["counts"] == {"files": 1, "documents": 8, "passages": 10, "words": sum(len(p["text"].split()) for p in PASSAGES)}
        [src] = m["sources"]
        assert src["path"] == str(corpus) and src["kind"] == "passages" and src["documents"] == 8 and src["passages"] == 10
        assert src["sha256"] == hashlib.sha256(corpus.read_bytes()).hexdigest() and src["bytes"] == corpus.stat().st_size
        # an untitled passage is cited by its id; a numeric id is text
        untitled = [p for p in idx.search("anaphylaxis adrenaline", 1)][0]
        assert (untitled.doc_id, untitled.title, untitled.citation) == ("7", "7", "7")
    # the hash says what queries return: same corpus, same hash; one word changed, another
    again = build_index(corpus, tmp_path / "again.sqlite")
    assert again["index_hash"] == m["index_hash"]
    changed = write_jsonl(tmp_path / "changed.jsonl", [*PASSAGES[:-1], {**PASSAGES[-1], "text": PASSAGES[-1]["text"] + " extra"}])
    assert build_index(changed, tmp_path / "changed.sqlite")["index_hash"] != m["index_hash"]
    # rebuilding over an index replaces it; no temporary file is left beside it
    build_index(changed, index)
    assert CorpusIndex(index).index_hash != m["index_hash"]
    assert not [p for p in tmp_path.iterdir() if "tmp" in p.name]


def test_chunking_keeps_document_id_and_title(index):
    assert chunk("a b c", 10, 2) == ["a b c"] and chunk("   ", 10, 2) == []
    parts = chunk(" ".join(LONG_WORDS), 200, 40)
    assert [len(p.split()) for p in parts] == [200, 200, 130]
    assert parts[1].split()[0] == "w0160" and parts[2].split()[0] == "w0320" and parts[2].split()[-1] == "w0449"
    assert parts[0].split()[-40:] == parts[1].split()[:40]  # 40 words of overlap
    with pytest.raises(ValueError):
        chunk("a b", 10, 10)
    with CorpusIndex(index) as idx:
        hits = idx.search("w0170", 5)  # in chunk 1 (0-199) and chunk 2 (160-359)
        # equal scores (same length, one occurrence each): rowid order
        assert [(h.doc_id, h.chunk, h.chunks, h.title) for h in hits] == [
            ("p-long", 1, 3, "A long handbook chapter"),
            ("p-long", 2, 3, "A long handbook chapter"),
        ]
        assert hits[0].citation.startswith("A long handbook chapter (p-long, part ")
        assert [(h.doc_id, h.chunk) for h in idx.search("w0449", 5)] == [("p-long", 3)]


def test_chunk_options_reach_the_manifest(tmp_path, corpus):
    m = build_index(corpus, tmp_path / "small.sqlite", chunk_words=100, overlap=0)
    assert m["chunking"]["words"] == 100 and m["counts"]["passages"] == 7 + 5
    with pytest.raises(ConfigError, match="overlap"):
        build_index(corpus, tmp_path / "bad.sqlite", chunk_words=100, overlap=100)
    assert not (tmp_path / "bad.sqlite").exists()


def test_a_folder_of_text_and_markdown(tmp_path):
    d = tmp_path / "notes"
    (d / "cardio").mkdir(parents=True)
    (d / "cardio" / "af.md").write_text("# Atrial fibrillation\n\nRate control with beta blockers; anticoagulation by CHA2DS2-VASc.\n")
    (d / "renal.txt").write_text("Acute kidney injury: stop nephrotoxic drugs and restore volume.\n")
    (d / "image.png").write_bytes(b"\x89PNG")
    (d / ".hidden.txt").write_text("never read")
    (d / "empty.txt").write_text("  \n")
    m = build_index(d, tmp_path / "notes.sqlite")
    assert [s["path"] for s in m["sources"]] == [str(d / "cardio" / "af.md"), str(d / "empty.txt"), str(d / "renal.txt")]
    assert m["counts"]["documents"] == 2 and m["skipped"] == [{"path": str(d / "image.png"), "reason": "not .txt, .md, .jsonl or .json"}]
    with CorpusIndex(tmp_path / "notes.sqlite") as idx:
        [af] = idx.search("anticoagulation in atrial fibrillation", 1)
        assert (af.doc_id, af.title) == ("cardio/af.md", "Atrial fibrillation")
        [aki] = idx.search("kidney injury", 1)
        assert (aki.doc_id, aki.title) == ("renal.txt", "renal")
        assert idx.search("never read", 3) == []


def test_bad_passages_name_file_line_and_field(tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "text": "fine text"}, {"id": "b", "body": "no text field"}])
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'text' is missing"):
        build_index(bad, tmp_path / "bad.sqlite")
    dup = write_jsonl(tmp_path / "dup.jsonl", [{"id": "a", "text": "one"}, {"id": "a", "text": "two"}])
    with pytest.raises(InputError, match=r"dup.jsonl:2: field 'id' 'a' is given twice \(first at .*dup.jsonl:1\)"):
        build_index(dup, tmp_path / "dup.sqlite")
    no_id = write_jsonl(tmp_path / "noid.jsonl", [{"text": "one"}])
    with pytest.raises(InputError, match=r"noid.jsonl:1: field 'id' is missing"):
        build_index(no_id, tmp_path / "noid.sqlite")
    body = write_jsonl(tmp_path / "body.jsonl", [{"id": "a", "body": "the text under another name"}])
    assert build_index(body, tmp_path / "body.sqlite", field="body")["field"] == "body"
    assert not (tmp_path / "bad.sqlite").exists() and not (tmp_path / "dup.sqlite").exists()


@pytest.mark.skipif(not PUBMEDQA.exists(), reason="../shared/data/pubmedqa is absent")
def test_pubmedqa_abstracts_as_a_corpus(tmp_path):
    m = build_index(PUBMEDQA.parent, tmp_path / "pq.sqlite")
    assert m["counts"]["documents"] == 250 and m["sources"][0]["kind"] == "pubmedqa"
    assert m["skipped"] == [{"path": str(PUBMEDQA.parent / "LICENSE"), "reason": "not .txt, .md, .jsonl or .json"}]
    data = json.loads(PUBMEDQA.read_text())
    pmid, entry = next(iter(data.items()))
    conn = sqlite3.connect(tmp_path / "pq.sqlite")
    texts = " ".join(r[0] for r in conn.execute("SELECT text FROM passages"))
    conn.close()
    assert entry["CONTEXTS"][0].split()[0] in texts
    # the abstracts only: no conclusion (LONG_ANSWER), no question
    assert not any(contains(texts, e["LONG_ANSWER"]) for e in data.values())
    with CorpusIndex(tmp_path / "pq.sqlite") as idx:
        top = idx.search(" ".join(entry["CONTEXTS"][0].split()[:25]), 1)[0]
        assert top.doc_id == f"PMID {pmid}" and top.title == "PubMed abstract"
        q = "Is the BMI associated with outcomes after surgery in obese patients?"
        assert [(h.doc_id, h.chunk) for h in idx.search(q, 5)] == direct(tmp_path / "pq.sqlite", match_expression(q), 5)


# ------------------------------------------------------------------ queries


def test_bm25_order_matches_a_direct_fts5_query(index):
    cases = {
        "Which drugs are first-line for hypertension?": '"drugs" OR "first" OR "line" OR "hypertension"',
        "How is acute asthma relieved, with salbutamol?": '"acute" OR "asthma" OR "relieved" OR "salbutamol"',
        "Question: fasting plasma glucose in diabetes?\nOptions:\nA. glucose\nB. glucagon": ('"fasting" OR "plasma" OR "glucose" OR "diabetes" OR "glucagon"'),
    }
    with CorpusIndex(index) as idx:
        for text, expression in cases.items():
            assert match_expression(text) == expression
            got = [(h.doc_id, h.chunk) for h in idx.search(text, 4)]
            assert got == direct(index, expression, 4), text
            assert [h.rank for h in idx.search(text, 4)] == list(range(1, len(got) + 1))
        assert idx.search("Which drugs are first-line for hypertension?", 1)[0].doc_id == "p-htn"
        assert [h.doc_id for h in idx.search("fasting plasma glucose diabetes", 3)][:2] in (["p-dm", "p-leak"], ["p-leak", "p-dm"])
        # bm25 scores come back ordered (lower is better) and the same every time
        scores = [h.score for h in idx.search("glucose diabetes hypoglycaemia", 4)]
        assert scores == sorted(scores) and scores == [h.score for h in idx.search("glucose diabetes hypoglycaemia", 4)]


@pytest.mark.parametrize(
    "nasty",
    [
        "AND",
        "OR NOT",
        '"',
        '"unbalanced quote',
        "((( hypertension",
        "hypertension)",
        "*",
        "hyper*",
        "NEAR(drugs hypertension, 2)",
        "drugs AND",
        "title:hypertension",
        "^hypertension",
        "-hypertension",
        "it's the patient's \"drug\"",
        "a - b + c",
        "{title}: x",
        'hypertension" OR "x',
        "NOT hypertension",
        "\u0000 hypertension",
        "ñandú ÄRZTE hypertension",
        "",
    ],
)
def test_user_text_never_breaks_fts_syntax(index, nasty):
    with CorpusIndex(index) as idx:
        hits = idx.search(nasty, 3)  # never an sqlite3.OperationalError
        expr = match_expression(nasty)
        assert [(h.doc_id, h.chunk) for h in hits] == ([] if expr is None else direct(index, expr, 3))
        if "hypertension" in nasty.lower():
            assert hits and hits[0].doc_id == "p-htn"


def test_terms_and_quoting():
    assert fts_string('a"b') == '"a""b"' and fts_string("AND") == '"AND"'
    assert query_terms("Which of the following is the BEST answer? A. Aspirin B. aspirin 5 mg") == ["aspirin", "mg"]
    assert match_expression("the of and OR NOT") is None  # operators are words, and these are stopwords
    assert match_expression("NEAR AND") == '"near"'
    assert len(query_terms(" ".join(f"term{i}" for i in range(100)))) == 32
    assert contains("Glucose of 126 mg/dL (7.0 mmol/L) confirmed", "126 mg/dL (7.0 mmol/L)")
    assert not contains("glucose of 1260 mg/dL", "126 mg/dL") and not contains("anything", "")


# ------------------------------------------------------------------ refusing answer keys


def _refused(tmp_path, path, why: str) -> None:
    out = tmp_path / "refused.sqlite"
    with pytest.raises(InputError, match=why) as e:
        build_index(path, out)
    assert str(path) in str(e.value) and "not indexed" in str(e.value)
    assert not out.exists() and not [p for p in out.parent.iterdir() if p.name.startswith(".refused")]


def test_the_index_refuses_suites_and_benchmark_files(tmp_path):
    # a suite directory, a folder holding one, and a suite's own files
    _refused(tmp_path, sample_suite_dir(), "is a suite directory")
    holder = tmp_path / "holder"
    sample_suite().save(holder / "nested" / "suite")
    (holder / "notes.txt").write_text("harmless")
    _refused(tmp_path, holder, "is a suite directory")
    _refused(tmp_path, sample_suite_dir() / "items.jsonl", "is a suite's items.jsonl")
    # a MedQA-format file and a MedMisBench-format file (the study's flat release rows)
    medqa = write_jsonl(tmp_path / "q.jsonl", [{"question": "Q?", "options": {"A": "x", "B": "y"}, "answer": "x", "answer_idx": "A"}])
    _refused(tmp_path, medqa, "'medqa' benchmark file")
    flat = write_jsonl(
        tmp_path / "MEDMISQA.jsonl",
        [
            {
                "id": "1",
                "question": "Q?",
                "answer": "A",
                "opa": "x",
                "opb": "y",
                "injecta": "true",
                "injectb": "false",
                "injection_content": "Cue Remapping",
                "injection_provenance": "Neutral False Statement",
            }
        ],
    )
    _refused(tmp_path, flat, "the misleading family's format detector")
    _refused(tmp_path, sample_release_path(), "the misleading family's format detector")
    # items written by `medres import` (any name), and a folder that hides one among text files
    items = tmp_path / "mine"
    items.mkdir()
    (items / "a.txt").write_text("a note")
    write_jsonl(items / "exported.jsonl", [{"id": "x", "source": "s", "question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "A"}])
    _refused(tmp_path, items, "holds items")
    (tmp_path / "mmlu").mkdir()
    (tmp_path / "mmlu" / "anatomy_test.csv").write_text("Q?,a,b,c,d,A\n")
    _refused(tmp_path, tmp_path / "mmlu", "'mmlu' benchmark file")
    if MEDQA.exists():
        _refused(tmp_path, MEDQA.parent, "'medqa' benchmark file")


def test_an_existing_file_that_is_not_an_index_is_never_overwritten(tmp_path, corpus):
    other = tmp_path / "store.sqlite"
    other.write_bytes(b"precious")
    with pytest.raises(InputError, match="is not a medres corpus index; not overwritten"):
        build_index(corpus, other)
    assert other.read_bytes() == b"precious"


def test_gold_text_is_filtered_at_query_time(index):
    setting = mitigations.get(f"retrieval:{index},k=2")
    mcq = Item(
        id="g1",
        source="t",
        question="What establishes diabetes?",
        answer="B",
        options={"A": "an HbA1c of 5 percent", "B": "126 mg/dL (7.0 mmol/L) confirmed on repeat testing"},
    )
    messages = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Fasting plasma glucose threshold for diabetes?"}]
    without_item = setting.apply(messages)[-1]["content"]
    with_item = setting.apply_to(messages, mcq)[-1]["content"]
    assert "(p-leak)" in without_item and "(p-leak)" not in with_item  # the passage holding the gold option's text
    assert "(p-hypo)" not in without_item and "(p-hypo)" in with_item  # still k passages: the next one takes its place
    assert "(p-dm)" in with_item and without_item.count("\n[E") == with_item.count("\n[E") == 2
    # a short gold text (under 4 words) filters nothing: it would take every relevant passage with it
    short = mcq.model_copy(update={"options": {"A": "5 percent", "B": "126 mg/dL"}})
    assert gold_texts(short) == () and setting.apply_to(messages, short) == setting.apply(messages)
    # free text: the item's reference
    free = Item(id="g2", source="t", question="When is alteplase given?", reference="within 4.5 hours of symptom onset")
    stroke = [{"role": "user", "content": "When is intravenous alteplase given for ischaemic stroke?"}]
    assert "(p-stroke)" in setting.apply(stroke)[0]["content"] and "(p-stroke)" not in setting.apply_to(stroke, free)[0]["content"]
    # none and caution take no item and ignore one
    for name in ("none", "caution"):
        s = mitigations.get(name)
        assert s.apply_item is None and s.apply_to(messages, mcq) == s.apply(messages)


def test_the_setting_is_configured_in_its_name(tmp_path, index):
    s = mitigations.get(f"retrieval:{index},k=2")
    assert s.name == f"retrieval:{index},k=2" and mitigations.get(f" retrieval:{index},k=2 ") is s  # made once
    with CorpusIndex(index) as idx:
        assert f"index_hash={idx.index_hash}" in s.texts["index"] and s.texts["k"] == "2"
    question = "Which drugs for hypertension in diabetes?"
    out = s.apply([{"role": "system", "content": "S"}, {"role": "user", "content": question}])
    assert out[0] == {"role": "system", "content": "S"}
    user = out[1]["content"]
    assert user.startswith(EVIDENCE_HEAD) and user.endswith(f"\n\n{question}") and user.count("\n[E") == 2
    assert "[E1] Hypertension drugs (p-htn)\nFirst-line drugs" in user
    assert mitigations.get(f"retrieval:index={index}").texts["k"] == "3"
    # terms=M: only the first M query terms (fewer is faster); later words then find nothing
    late = [{"role": "user", "content": "zorbl quix fnord blarg wibble salbutamol"}]
    assert "(p-asthma)" in s.apply(late)[0]["content"]
    few = mitigations.get(f"retrieval:{index},terms=4")
    assert few.texts["terms"] == "4" and few.apply(late)[0]["content"].startswith(NO_EVIDENCE)
    nothing = s.apply([{"role": "user", "content": "zygomatic xylophone"}])[0]["content"]
    assert nothing == f"{NO_EVIDENCE}\n\nzygomatic xylophone"
    for bad, why in [
        ("retrieval", "needs its configuration"),
        ("retrieval:", "needs its configuration"),
        (f"retrieval:{index},k=0", "k must be from 1 to 20"),
        (f"retrieval:{index},k=x", "whole number"),
        (f"retrieval:{index},terms=3", "terms must be from 4 to 64"),
        (f"retrieval:{index},top=3", "unknown option 'top'"),
        ("retrival:x", "unknown setting"),
    ]:
        with pytest.raises(ConfigError, match=why):
            mitigations.get(bad)
    with pytest.raises(InputError, match="no corpus index here"):
        mitigations.get(f"retrieval:{tmp_path / 'missing.sqlite'}")
    assert "none" in mitigations.names() and "caution" in mitigations.names() and any(n.startswith("retrieval:INDEX") for n in mitigations.names())


# ------------------------------------------------------------------ end to end

#: passages on the first six items of the bundled sample suite; two hold a gold option's text
SAMPLE_PASSAGES = [
    {
        "id": "p-ph",
        "title": "Arterial blood gas",
        "text": "The arterial pH of a healthy adult is held in a narrow range by bicarbonate "
        "and carbon dioxide buffering; acidaemia and alkalaemia lie outside it.",
    },
    {
        "id": "p-tachy",
        "title": "Tachycardia",
        "text": "Tachycardia in an adult at rest is a heart rate over the conventional upper limit; causes include fever, pain and hypovolaemia.",
    },
    {
        "id": "p-cpr",
        "title": "Resuscitation",
        "text": "High-quality cardiopulmonary resuscitation in cardiac arrest: push hard and fast, "
        "allow full chest recoil and keep interruptions of chest compression short.",
    },
    {
        "id": "p-cpr-leak",
        "title": "Compression rate",
        "text": "Adult resuscitation guidelines recommend a chest compression rate of 100 to 120 compressions per minute.",
    },
    {
        "id": "p-platelet",
        "title": "Platelets",
        "text": "The platelet count of a healthy adult is part of the complete blood count; thrombocytopenia raises the risk of bleeding.",
    },
    {
        "id": "p-fever",
        "title": "Fever in infants",
        "text": "Fever in an infant is judged by a rectal temperature; a febrile infant under three months needs urgent evaluation.",
    },
]


@pytest.fixture
def sample_index(tmp_path) -> Path:
    out = tmp_path / "sample.sqlite"
    build_index(write_jsonl(tmp_path / "sample.jsonl", PASSAGES + SAMPLE_PASSAGES), out)
    return out


def test_evaluate_pairs_none_and_retrieval_and_resumes(tmp_path, sample_index):
    suite = sample_suite()
    calls = {"n": 0}

    def answer(messages, request):
        calls["n"] += 1
        return "Answer: C"

    name = f"retrieval:{sample_index},k=2"
    opts = EvalOptions(settings=("none", name), limit=6)
    with StubServer(policy=answer) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url}")
        keys = [p.unit.key for p in plan(suite, [spec], opts)]
        assert keys == [p.unit.key for p in plan(suite, [spec], opts)]  # same index + messages -> same requests
        res = evaluate(suite, [spec], tmp_path / "run", opts)
        made = calls["n"]
        again = evaluate(suite, [spec], tmp_path / "run", opts)
    assert made == res.stats.called > 0 and again.stats.called == 0 and calls["n"] == made  # the rerun makes no call
    assert set(res.results.models["stub-model"]) == {"none", name}
    with Store(tmp_path / "run" / "store.sqlite") as st:
        rows = st.conn.execute("SELECT u.setting, u.item_id, r.messages FROM units u JOIN requests r ON r.key = u.key").fetchall()
        df = results_frame(st, suite)
    by_setting: dict[str, list[tuple[str, str]]] = {}
    for setting, item_id, messages in rows:
        user = [m for m in json.loads(messages) if m["role"] == "user"][-1]["content"]
        by_setting.setdefault(setting, []).append((item_id, user))
    assert all(not u.startswith((EVIDENCE_HEAD, NO_EVIDENCE)) and "[E1]" not in u for _, u in by_setting["none"])
    assert len(by_setting[name]) == len(by_setting["none"]) == 18 and all(u.startswith(EVIDENCE_HEAD) for _, u in by_setting[name])
    # two items: their evidence is on topic, never the passage holding their gold option's text
    for item_id, topic, leak in [("bm-001", "(p-dm)", "(p-leak)"), ("bm-004", "(p-cpr)", "(p-cpr-leak)")]:
        got = [u for i, u in by_setting[name] if i == item_id]
        gold = suite.items[item_id].options[suite.items[item_id].answer]
        assert len(got) == 3 and all(topic in u and leak not in u for u in got) and len(gold.split()) >= 4
        # without the item (no filter) the leaking passage would have been among the evidence
        rendered = next(json.loads(m) for s_, i, m in rows if s_ == "none" and i == item_id)
        assert leak in mitigations.get(name).apply(rendered)[-1]["content"]
    # paired by item, probe and condition across the two settings
    pairs = df.groupby(["item_id", "probe_id", "condition"], dropna=False, observed=True)["setting"].apply(lambda s: sorted(map(str, s)))
    assert len(pairs) == len(df) // 2 and all(v == sorted(["none", name]) for v in pairs)
    assert df["item_id"].nunique() == 6
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    with CorpusIndex(sample_index) as idx:
        assert f"index_hash={idx.index_hash}" in cfg["prompts"]["texts"][f"setting.{name}.index"]
    assert cfg["options"]["settings"] == ["none", name]


def test_the_command_line_end_to_end(tmp_path, corpus, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["corpus", "index", str(corpus), "--out", "idx.sqlite", "--chunk-words", "150"])
    assert r.exit_code == 0, r.output
    assert "11 passages of 8 documents from 1 files" in r.output and "retrieval:idx.sqlite" in r.output
    r = runner.invoke(app, ["corpus", "search", "idx.sqlite", 'hypertension AND "drugs (', "-k", "1"])
    assert r.exit_code == 0 and "[E1] Hypertension drugs (p-htn)" in r.output
    r = runner.invoke(app, ["corpus", "index", str(sample_suite_dir()), "--out", "bad.sqlite"])
    assert r.exit_code == 2 and "is a suite directory" in r.output and not (tmp_path / "bad.sqlite").exists()
    with StubServer(policy=lambda messages, request: "Answer: B") as srv:
        args = [
            "eval",
            "--model",
            f"openai:stub-model,base_url={srv.base_url}",
            "--setting",
            "none",
            "--setting",
            "retrieval:idx.sqlite,k=1",
            "--limit",
            "2",
            "--out",
            "run",
        ]
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
        assert "0 reused from the store" in r.output
        r = runner.invoke(app, args)
        assert r.exit_code == 0 and "0 made" in r.output, r.output
    r = runner.invoke(app, ["eval", "--model", "openai:stub-model,base_url=http://127.0.0.1:9/v1", "--setting", "retrieval", "--limit", "1", "--out", "run2"])
    assert r.exit_code == 2 and "needs its configuration: retrieval:INDEX.sqlite" in r.output
