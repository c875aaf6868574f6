"""The clinical-noise perturbations, without a model: red-herring placement (boundaries only,
nested doses, the block, the whitespace control, seeds), the checks on generated sentences,
abbreviation substitution (whole word, longest first, case) and the rewrite's number check."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from conftest import FIXTURES, shared_data
from medresilience.build.stages import Rejected
from medresilience.families.noise.construct import abbreviations as ab
from medresilience.families.noise.construct import redherring, rewrite
from medresilience.families.noise.construct.cases import CaseSkip, diagnosis_cases, load_items_file
from medresilience.families.noise.construct.split import insertion_points
from medresilience.families.noise.taxonomy import CONDITIONS, HERRING_VARIANTS, facets_of, parse_variants
from medresilience.families.noise.testing import BANK, FakeGenerator
from medresilience.records import Item

FIXTURE = FIXTURES / "noise_abbreviations.tsv"


def medqa_cases(n: int | None = None) -> list[Item]:
    items = load_items_file(shared_data("medqa", "us_4options_test_even.jsonl"))
    cases = [c for c in diagnosis_cases(items) if not isinstance(c, CaseSkip)]
    return cases[:n] if n else cases


def herrings_for(case: Item) -> list[str]:
    return FakeGenerator().herrings(case.question)


# --------------------------------------------------------------------------- red herrings


def test_red_herrings_go_only_to_boundaries_nested_and_rebuildable():
    for case in medqa_cases(40):
        hs = herrings_for(case)
        probes = {p.condition: p for p in redherring.variant_probes(case, hs, 3, HERRING_VARIANTS, "fake")}
        points = set(insertion_points(case.question))
        if not points:
            assert probes == {}
            continue
        assert list(probes) == list(HERRING_VARIANTS)
        ins = {v: p.parts["insertions"] for v, p in probes.items()}
        for v, p in probes.items():
            assert p.id == f"{case.id}:{v}" and p.item_id == case.id and p.facets == facets_of(v)
            assert all(i["at"] in points for i in ins[v]), v
            assert redherring.rebuild(case.question, hs, ins[v], blank=v == "whitespace") == p.parts["text"]
        assert [len(ins[v]) for v in ("redherring-1", "redherring-5", "redherring-10", "together-10", "whitespace")] == [1, 5, 10, 10, 10]
        # nested: the 1 among the 5 among the 10, each at the place it has in the 10
        ten = {(i["at"], i["herring"]) for i in ins["redherring-10"]}
        five = {(i["at"], i["herring"]) for i in ins["redherring-5"]}
        one = {(i["at"], i["herring"]) for i in ins["redherring-1"]}
        assert one <= five <= ten and len({h for _, h in ten}) == 10
        # the block: the same 10 in order at one boundary
        assert len({i["at"] for i in ins["together-10"]}) == 1 and [i["herring"] for i in ins["together-10"]] == list(range(10))
        # removing the inserted sentences gives the case back; every sentence appears once
        text = probes["redherring-10"].parts["text"]
        for h in hs:
            assert text.count(h) == 1
        stripped = text
        for h in hs:
            stripped = stripped.replace(" " + h, "", 1)
        assert stripped == case.question
        # whitespace: the same places, spaces of the same lengths
        assert ins["whitespace"] == ins["redherring-10"]
        blank = probes["whitespace"].parts["text"]
        assert len(blank) == len(text) and blank.split() == case.question.split()
        for a, b in zip(blank, text):
            assert a == b or a == " "


def test_placement_depends_on_the_seed_only():
    """Where the sentences go is a pure function of (seed, item): the same after the global random
    state is disturbed, the same for an item whatever items come before it, and different for
    another seed or another item id."""
    import random

    import numpy as np

    cases = medqa_cases(20)

    def positions(seed, of=cases):
        return [
            [(i["at"], i["herring"]) for i in p.parts["insertions"]]
            for c in of
            for p in redherring.variant_probes(c, herrings_for(c), seed, ["redherring-10", "together-10", "redherring-5"])
        ]

    first = positions(7)
    random.seed(12345)
    random.random()
    np.random.seed(12345)
    assert positions(7) == first  # no global random state is read
    per_case = [positions(7, [c]) for c in cases]
    assert [x for one in per_case for x in one] == first  # nor a stream shared across items
    assert [x for one in reversed(per_case) for x in one] == positions(7, list(reversed(cases)))
    assert positions(7) != positions(8)
    renamed = [c.model_copy(update={"id": c.id + "-renamed"}) for c in cases]
    assert positions(7, renamed) != first  # the item's id is part of what places them
    same_herrings = [p.parts["text"] for c in cases for p in redherring.variant_probes(c, herrings_for(c), 8, ["redherring-10"])]
    assert all(all(h in t for h in herrings_for(c)) for c, t in zip([c for c in cases if insertion_points(c.question)], same_herrings))


def test_generated_sentences_are_checked():
    case = Item(
        id="c", source="x", question="A man has a swollen knee.", options={"A": "Gout", "B": "Septic arthritis"}, answer="B", reference="Septic arthritis"
    )
    ok = list(BANK[:10])
    assert redherring.check_sentences(ok, case) == ok
    assert redherring.check_sentences([s.rstrip(".") for s in ok], case) == ok  # a missing final period is added
    bad = {
        "too_few": ok[:9],
        "clinical_content": [*ok[:9], "He takes a pill for his back pain."],
        "names_an_option": [*ok[:9], "He once wrote a poem called Septic Arthritis."],
        "not_one_sentence": [*ok[:9], "He likes boats. He owns two."],
        "duplicate": [*ok[:9], ok[0]],
        "too_long": [*ok[:9], "word " * 60],
    }
    for code, raw in bad.items():
        with pytest.raises(Rejected) as e:
            redherring.check_sentences(raw, case)
        assert e.value.code == code
    parse = redherring.parser(case)
    assert parse(json.dumps({"sentences": ok + ["an eleventh, ignored."]})) == ok
    for reply in ("", "not json", json.dumps({"other": []}), json.dumps(["a"])):
        with pytest.raises(Rejected) as e:
            parse(reply)
        assert e.value.code == "parse_failed"


def test_the_fake_generators_bank_passes_the_checks():
    for case in medqa_cases(30):
        assert len(redherring.check_sentences(herrings_for(case), case)) == 10


# --------------------------------------------------------------------------- abbreviations


def test_the_most_frequent_abbreviation_per_sense():
    table = ab.load_table([FIXTURE])
    forms = {s: a.form for s, a in table.items()}
    assert forms == {
        "abdominal": "abd",
        "blood": "bld",
        "blood pressure": "BP",
        "history": "Hx",
        "history of": "h/o",
        "medications": "meds",
        "patient": "pt",
        "with": "w/",
    }
    assert "in" not in table and "diagnosis" not in table  # used for its sense under half the time
    assert table["blood pressure"].key == "bp"  # both rows mean it always: the more observed one wins
    assert len(ab.load_table([FIXTURE], min_frequency=0.0)) == 10


#: the 50 most frequent substitutions of the clinical rules on the 139 MedQA diagnosis cases, each
#: reviewed as a way clinicians write the word in a note (a pair not here needs a review first)
REVIEWED = {
    "with -> w/",
    "patient -> pt",
    "blood pressure -> BP",
    "physical -> phys",
    "pulse -> P",
    "because -> b/c",
    "left -> lt",
    "history of -> h/o",
    "mother -> mom",
    "negative -> Neg",
    "weeks -> wks",
    "years -> yrs",
    "right -> R",
    "months -> mos",
    "laboratory -> lab",
    "hemoglobin -> Hgb",
    "emergency department -> ED",
    "week -> wk",
    "abdomen -> Abd",
    "weight -> Wt",
    "medications -> meds",
    "positive -> pos",
    "day -> da",
    "symptoms -> sxs",
    "normal -> nml",
    "blood -> bld",
    "respiratory rate -> RR",
    "hours -> hrs",
    "platelet -> plt",
    "extremities -> extr",
    "within normal limits -> WNL",
    "past medical history -> PMHx",
    "without -> w/o",
    "bilirubin -> Bili",
    "family -> Fam",
    "family history -> FH",
    "hypertension -> HTN",
    "history -> hx",
    "creatinine -> Cr",
    "bowel sounds -> BS",
    "alkaline phosphatase -> AlkP",
    "shortness of breath -> SOB",
    "biopsy -> bx",
    "increased -> incr",
    "clinic -> clin",
    "ultrasound -> U/S",
    "glucose -> Gluc",
    "hour -> hr",
    "due to -> d/t",
    "emergency room -> ER",
    "diabetes mellitus -> DM",
    "evaluation -> eval",
}


def _top_substitutions(rules: str, n: int = 50) -> tuple[dict, list[tuple[str, str]]]:
    from medresilience.sources import load_items

    inventories = shared_data("abbreviations")
    cases = [c for c in diagnosis_cases(load_items(shared_data("medqa", "us_4options_test_even.jsonl"))) if isinstance(c, Item)]
    assert len(cases) == 139
    table = ab.load_table([inventories], rules=rules)
    sub = ab.Abbreviator(table)
    counts: Counter = Counter()
    for c in cases:
        counts.update((r.sense.lower(), table[r.sense.lower()].form) for r in sub.substitute(c.question)[1])
    return table, [pair for pair, _ in counts.most_common(n)]


def test_the_50_most_frequent_substitutions_on_medqa_are_ones_clinicians_write():
    """On the MedQA diagnosis cases with the Vanderbilt inventories: no number word, no lab-report
    column code, no sense that another inventory reads the abbreviation as rarely; each of the 50
    reviewed. The study's plain string match stays available by name and still makes the swaps
    the clinical rules leave out."""
    rows = [r for f in ab.inventory_files([shared_data("abbreviations")]) for r in ab.read_inventory(f)]
    readings: dict = {}
    for r in rows:
        readings.setdefault((r["inventory"], r["abbreviation"].lower()), {})[r["sense"].lower()] = r["frequency"]
    table, top = _top_substitutions("clinical")
    assert len(top) == 50
    for sense, form in top:
        assert sense not in ab.NUMBER_WORDS and not ab.column_code(form, sense), (sense, form)
        key = table[sense].key.lower()
        assert all(senses.get(sense, 0.0) >= ab.MIN_FREQUENCY for (_, k), senses in readings.items() if k == key), (sense, form)
    assert {f"{s} -> {f}" for s, f in top} <= REVIEWED, sorted({f"{s} -> {f}" for s, f in top} - REVIEWED)
    shown = {s: f for s, f in top}
    assert "woman" not in table and "two" not in table and "cardiac" not in table and table["lymphocytes"].form != "LYMPRE"
    assert shown["bowel sounds"] == "BS" and shown["extremities"] == "extr"
    study, study_top = _top_substitutions("study")
    assert {("two", "II"), ("woman", "WM"), ("bowel sounds", "BS+")} <= set(study_top)
    assert study["cardiac"].form.lower() == "cor" and study["lymphocytes"].form == "LYMPRE"


def test_the_clinical_rules_on_a_handmade_inventory(tmp_path):
    inv = tmp_path / "inv.tsv"
    inv.write_text(
        "abbreviation\tsense\tvariation\tCUI\tfrequency\n"
        "ii\ttwo\tII_21\tc1\t1\n"
        "lympre\tlymphocytes\tLYMPRE_3\tc2\t1\n"
        "resprt\trespiratory rate\tRespRt_7\tc3\t1\n"
        "rr\trespiratory rate\tRR_5\tc3\t0.9\n"
        "bs+\tbowel sounds\tBS+_2\tc4\t1\n"
        "extr\textremities\tEXTR_7|extr_7\tc5\t1\n"
        "hasn\thas not\thasn_7\tc6\t1\n"
        "wm\twoman\tWM_22\tc7\t0.94\n"
    )
    other = tmp_path / "other.tsv"
    other.write_text("abbreviation\tsense\tvariation\tCUI\tfrequency\nwm\twhite male\tWM_17\tc8\t0.99\n")
    clinical = {s: a.form for s, a in ab.load_table([inv, other]).items()}
    assert clinical == {"extremities": "extr", "respiratory rate": "RR"}
    study = {s: a.form for s, a in ab.load_table([inv, other], rules="study").items()}
    assert study == {
        "two": "II",
        "lymphocytes": "LYMPRE",
        "respiratory rate": "RespRt",
        "bowel sounds": "BS+",
        "extremities": "EXTR",
        "has not": "hasn",
        "woman": "WM",
        "white male": "WM",
    }
    with pytest.raises(Exception, match="abbreviation-rules"):
        ab.load_table([inv], rules="loose")


def test_substitution_is_whole_word_longest_first_and_case_aware():
    sub = ab.Abbreviator(ab.load_table([FIXTURE]))
    text = (
        "The patient has a history of high blood pressure treated with medications. Patient history: bloody stool "
        "within days, in the ward. PATIENT HISTORY OF BLOOD loss. Blood pressure is low. With abdominal  pain."
    )
    new, reps = sub.substitute(text)
    assert new == ("The pt has a h/o high BP treated w/ meds. Pt Hx: bloody stool within days, in the ward. PT H/O BLD loss. BP is low. W/ abd  pain.")
    assert ab.apply(text, [r.as_dict() for r in reps]) == new
    assert [r.original for r in reps][:4] == ["patient", "history of", "blood pressure", "with"]
    counts = Counter((r.sense, sub.table[r.sense.lower()].form) for r in reps)
    assert ab.frequency_table(counts)["patient -> pt"] == 3
    with pytest.raises(ValueError):
        ab.apply(text, [{"at": 0, "original": "Patient", "abbreviation": "Pt"}])


def test_a_bad_inventory_names_file_and_line(tmp_path):
    from medresilience.runtime.errors import InputError

    bad = tmp_path / "inv.tsv"
    bad.write_text("abbreviation\tsense\tvariation\tCUI\tfrequency\nbp\tblood pressure\tBP_1\tc1\tlots\n")
    with pytest.raises(InputError, match=r"inv.tsv:2: field 'frequency'"):
        ab.load_table([bad])
    with pytest.raises(InputError):
        ab.load_table([tmp_path / "missing.tsv"])
    latin = tmp_path / "latin.tsv"
    latin.write_bytes(b"\xef\xbb\xbfabbreviation\tsense\tvariation\tCUI\tfrequency\nbp\tblood pressure\tBP_1\tc1\t10\npt\tpati\xe9nt\tPT_1\tc2\t5\n")
    with pytest.raises(InputError, match=r"latin.tsv:3: not UTF-8 text"):
        ab.load_table([latin])


def test_vanderbilt_inventories_on_medqa_cases():
    table = ab.load_table([shared_data("abbreviations")])
    assert table["with"].form == "w/" and table["blood pressure"].form == "BP" and table["patient"].form == "pt"
    sub = ab.Abbreviator(table)
    counts: Counter[tuple[str, str]] = Counter()
    for case in medqa_cases():
        new, reps = sub.substitute(case.question)
        assert ab.apply(case.question, [r.as_dict() for r in reps]) == new
        for r in reps:
            i = r.at
            assert case.question[i : i + len(r.original)] == r.original
            assert not case.question[i - 1 : i].isalnum() and not case.question[i + len(r.original) : i + len(r.original) + 1].isalnum()
        counts.update((r.sense, table[r.sense.lower()].form) for r in reps)
    top = list(ab.frequency_table(counts))[:5]
    assert top[:2] == ["with -> w/", "patient -> pt"]  # the study's two most replaced senses
    assert "blood pressure -> BP" in top


# --------------------------------------------------------------------------- rewrite


def test_numbers_must_survive_a_rewrite():
    original = "Temp 38.5°C (101.3°F), pulse 93/min, BP 125/85 mm Hg. WBC 16,400/mm³. Na+ 140 mEq/L, K+ 4.0. Two weeks ago."
    kept = "temp 38.5 C / 101.3 F, HR 93, BP 125/85. WBC 16400/mm3, Na 140, K 4. 2 wks ago."
    assert rewrite.missing_numbers(original, kept) == []
    assert rewrite.missing_numbers(original, kept.replace("93", "")) == ["93"]
    assert rewrite.missing_numbers("pulse 80, then 80 again", "pulse 80") == ["80"]  # as often as it occurs
    assert rewrite.numbers("5.0 and 0.50 and 007") == Counter({"5": 1, "0.5": 1, "7": 1})


def test_a_rewrite_is_checked():
    case = Item(
        id="c",
        source="x",
        question="A 61-year-old man has had fever of 38.5°C for 3 days and a swollen knee.",
        options={"A": "Gout", "B": "Septic arthritis"},
        answer="B",
        reference="Septic arthritis",
    )
    parse = rewrite.parser(case)
    assert parse(json.dumps({"note": "61 y/o M, fever 38.5 x 3 days, knee swollen."})).startswith("61 y/o")
    cases = {
        "numbers_lost": "61 y/o M, fever x 3 days, knee swollen.",
        "names_the_answer": "61 y/o M, fever 38.5 x 3 days, knee swollen, likely septic arthritis.",
        "too_short": "61 38.5 3",
        "parse_failed": "",
        "unchanged": "A 61-year-old man has had  fever of 38.5°C for 3 days, and a SWOLLEN knee",
    }
    for code, note in cases.items():
        with pytest.raises(Rejected) as e:
            parse(json.dumps({"note": note}))
        assert e.value.code == code, note


def test_variant_names():
    assert parse_variants("redherring-10, whitespace") == ("redherring-10", "whitespace")
    assert parse_variants(["all"]) == CONDITIONS and parse_variants(None) is None
    with pytest.raises(ValueError, match="unknown variant"):
        parse_variants("redherring-3")
