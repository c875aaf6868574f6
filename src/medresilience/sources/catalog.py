"""Every benchmark and source the toolkit reads, by name: what it is, where it lives (a hub id, or a
download page for what is not on the hub), its licence, size, the `medres import` format that
reads it and the one command that gets it. `medres datasets` prints this table.

Each entry says how it was checked (`checked`) on CHECKED: the dataset's own page (hub card,
repository README) as found by a search of stored public pages on that date, or "not verified"
with the reason. Files that are not on the hub carry the SHA-256 of the copy this project tested
(`files`), so `medres import` can say when a download differs from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.errors import ConfigError

__all__ = ["CATALOG", "CHECKED", "Dataset", "get", "known_file"]

#: the date the ids, licences and checksums below were checked
CHECKED = "2026-11-26"


@dataclass(frozen=True)
class Dataset:
    name: str
    kind: str  # "release" (a study's benchmark: a suite) or "source" (questions: an items file) or "inventory"
    what: str
    where: str  # hf:OWNER/NAME or a download page
    licence: str
    size: str
    fmt: str  # the `medres import --format` that reads it
    command: str
    checked: str  # how the id and licence were checked, or why they could not be
    files: dict[str, str] = field(default_factory=dict)  # file name -> expected SHA-256 (files not on the hub; "" unknown)

    @property
    def hub_id(self) -> str | None:
        return self.where[3:] if self.where.startswith("hf:") else None


CATALOG: tuple[Dataset, ...] = (
    Dataset(
        "medmisbench",
        "release",
        "MedMisBench: MCQ items with one option-aligned context sentence per option (truthful for the gold, misleading for each "
        "distractor); configs MEDMISQA 3,112, MEDMISMCQA 3,986, MEDMISXPERTQA 1,544, MEDMISJOURNEY 2,197, MEDMISHLE 93 (one: "
        "hf:AI4HealthResearch/MedMisBench:MEDMISQA)",
        "hf:AI4HealthResearch/MedMisBench",
        "other (terms on the dataset card)",
        "10,932 items, JSON lines, one file per config",
        "medmisbench",
        "medres import hf:AI4HealthResearch/MedMisBench --out suites/medmisbench",
        "hub card README (configs data/medmis*.jsonl, counts, license: other); the paper (arXiv 2606.12291) names this id",
    ),
    Dataset(
        "cancer-myth",
        "release",
        "Cancer-Myth: physician-validated cancer patient questions that assume a myth, with the correction (7 categories)",
        "hf:Cancer-Myth/Cancer-Myth",
        "not verified (the study's repository has no licence file)",
        "585 questions",
        "cancer-myth",
        "medres import hf:Cancer-Myth/Cancer-Myth --out suites/cancer-myth",
        "id from the study's repository README (github.com/Bill1235813/cancer-myth, commit 7735c63); the hub card's file layout "
        "and licence could not be checked offline: if its files hold several configs, name one (hf:Cancer-Myth/Cancer-Myth:CONFIG)",
    ),
    Dataset(
        "cancer-myth-nfp",
        "release",
        "Cancer-Myth NFP: questions without a false presupposition (QID 1000-1149), the over-caution control",
        "https://github.com/Bill1235813/cancer-myth (data/nfp.json)",
        "no licence file in the repository",
        "150 questions",
        "cancer-myth-nfp",
        "medres import nfp.json --format cancer-myth-nfp --myths myth_treatment.jsonl --out suites/cm-nfp",
        "file seen in the study's repository (commit a359656); not found on the hub; no checksum (this project has no copy)",
        {"nfp.json": ""},
    ),
    Dataset(
        "cancer-myth-myths",
        "release",
        "Cancer-Myth myth records (cancer, myth, fact, source) over 135 cancer types, the seeds `medres build presupposition` reads",
        "https://github.com/Bill1235813/cancer-myth (data/myth_treatment.jsonl)",
        "no licence file in the repository",
        "994 myths",
        "myths",
        "medres import myth_treatment.jsonl --format myths --out myths.jsonl",
        "checksum of the file at commit 7735c63 of the study's repository",
        {
            "myth_treatment.jsonl": "fb4f8b027af5c986332837fa2f06c92410d864cabc2a6f7cab623ffe1550e347",
            "all_data_before_validation.json": "2dd5f2cc8306233293f479cc2e1f65c02c9fa9abca371b6c9a26d438395767d8",
        },
    ),
    Dataset(
        "medqa",
        "source",
        "MedQA (USMLE, US, 4 options)",
        "hf:GBaker/MedQA-USMLE-4-options",
        "cc-by-4.0 (hub card; the original MedQA repository is MIT)",
        "10,178 train, 1,273 test",
        "medqa",
        "medres import hf:GBaker/MedQA-USMLE-4-options:test --out medqa.jsonl",
        "hub card and file list (license cc-by-4.0; phrases_no_exclude_train.jsonl, phrases_no_exclude_test.jsonl: JSON lines with answer_idx)",
    ),
    Dataset(
        "medmcqa",
        "source",
        "MedMCQA (AIIMS and NEET PG entrance exams, 4 options, 21 subjects)",
        "hf:openlifescienceai/medmcqa",
        "apache-2.0 (hub card; the original repository is MIT)",
        "182,822 train, 4,183 validation, 6,150 test (no answers)",
        "medmcqa",
        "medres import hf:openlifescienceai/medmcqa:validation --out medmcqa.jsonl",
        "hub card (license apache-2.0, Parquet since its 2024 conversion, splits train/validation/test); file paths under data/ "
        "not listed in what was searched; its cop is 0-based, read as such from Parquet",
    ),
    Dataset(
        "mmlu-medical",
        "source",
        "MMLU medical subjects: anatomy, clinical_knowledge, college_biology, college_medicine, medical_genetics, professional_medicine",
        "hf:cais/mmlu",
        "mit (hub card)",
        "135 + 265 + 144 + 173 + 100 + 272 test questions",
        "mmlu",
        "medres import hf:cais/mmlu:anatomy/test --out anatomy.jsonl",
        "hub card (license mit, Parquet, a config per subject with splits test/validation/dev); the per-subject file paths "
        "(anatomy/test-*.parquet) from the dataset's file history; test sizes from the MMLU release",
    ),
    Dataset(
        "pubmedqa",
        "source",
        "PubMedQA-L: yes/no/maybe research questions with their abstracts",
        "hf:qiaojin/PubMedQA",
        "mit (hub card)",
        "1,000 (pqa_labeled)",
        "pubmedqa",
        "medres import hf:qiaojin/PubMedQA:pqa_labeled --out pubmedqa.jsonl",
        "hub card (license mit, config pqa_labeled: pubid, question, context, long_answer, final_decision); file paths not listed "
        "in what was searched (the config name selects them either way)",
    ),
    Dataset(
        "medxpertqa",
        "source",
        "MedXpertQA Text: expert-level medical questions, 10 options",
        "hf:TsinghuaC3I/MedXpertQA",
        "mit (hub card)",
        "2,450 test + 5 dev (Text); MM (images) is not read",
        "medxpertqa",
        "medres import hf:TsinghuaC3I/MedXpertQA:Text/test --out medxpertqa.jsonl",
        "hub card and file list (license mit, configs Text and MM, Text/test.jsonl and Text/dev.jsonl)",
    ),
    Dataset(
        "hle",
        "source",
        "Humanity's Last Exam: its text-only multiple-choice questions (image and exact-match rows are counted and left out)",
        "hf:cais/hle",
        "mit (hub card); gated: accept its terms on the dataset page, then set HF_TOKEN",
        "2,500 questions (all kinds)",
        "hle",
        "HF_TOKEN=hf_... medres import hf:cais/hle --out hle.jsonl",
        "hub card (gated: accept the conditions; license mit; Parquet); file paths not listed in what was searched",
    ),
    Dataset(
        "medjourney",
        "source",
        "MedJourney as MCQ with numbered options: the questions of MedMisBench's MEDMISJOURNEY config (the original MedJourney "
        "files list the candidates inline in Chinese and are not read)",
        "hf:AI4HealthResearch/MedMisBench",
        "other (MedMisBench's card); the original MedJourney: github.com/Medical-AI-Learning/MedJourney",
        "2,197 questions",
        "medjourney",
        "medres import hf:AI4HealthResearch/MedMisBench:MEDMISJOURNEY --format medjourney --out medjourney.jsonl",
        "the MEDMISJOURNEY config of the MedMisBench card; the original MedJourney's own licence not verified",
    ),
    Dataset(
        "medbullets",
        "source",
        "Medbullets (Chen et al., NAACL 2024): USMLE Step 2/3-style questions with explanations, one of Cancer-Myth's and "
        "MDAgents' benchmarks; medbullets_op4 (options A-D) and medbullets_op5 (A-E), the same 308 questions",
        "https://github.com/HanjieChen/ChallengeClinicalQA (medbullets/medbullets_op4.json, medbullets_op5.json; .csv alike)",
        "not stated (the repository has no licence file; the questions come from medbullets.com)",
        "308 questions per file",
        "medbullets",
        "medres import medbullets_op4.json --out medbullets.jsonl",
        "files and their layout seen in the authors' repository on 2026-11-29 (commit ef3c9da, 2024-08-21); hub copies by others "
        "(JesseLiu/medbulltes4op, LangAGI-Lab/medbullets_op5) not checked; the study does not say which file Cancer-Myth used",
        {
            "medbullets_op4.json": "1e1581c1b8d2f79735e71b8d07d0210a829087aac18e078dadc2ec2cb42ed68b",
            "medbullets_op5.json": "14e209d0dc5c6350290e878b8e7e392c976cc96765b8e2d0d7434a2787ea6998",
            "medbullets_op4.csv": "f35c24c7940fd3fd28594a4081e66bded3718cd98b4491d0f307d34ceb945893",
            "medbullets_op5.csv": "7da4b1397418b4bd15074066ea6a377ac44a599794a959cd8ebc76937ea597e6",
        },
    ),
    Dataset(
        "craft-md",
        "source",
        "CRAFT-MD (Johri et al., Nature Medicine 2025): case vignettes with four choices and the answer's text (1,804 "
        "MedQA-USMLE, 100 public and 100 private dermatology cases), one of Cancer-Myth's benchmarks; read as multiple choice",
        "https://github.com/rajpurkarlab/craft-md (data/usmle_and_derm_dataset.csv)",
        "MIT (the repository's licence file)",
        "2,004 cases; 2,003 read (case_112's answer is none of its choices: left out and counted)",
        "craftmd",
        "medres import usmle_and_derm_dataset.csv --out craftmd.jsonl",
        "file and licence seen in the authors' repository on 2026-11-29 (commit 3bb2737, 2025-03-14); Cancer-Myth cites CRAFT-MD under "
        "Medbullets' reference and does not say which cases or which condition (multiple choice or conversation) it scored",
        {"usmle_and_derm_dataset.csv": "8990d756d1eb2a795cd0cfddc350c6e031eacd1090140099982befbbe2c39d7e"},
    ),
    Dataset(
        "symcat",
        "source",
        "SymCat as MDAgents and Cancer-Myth evaluated it (symptoms -> disease questions); read in MedQA's row shape, the one MDAgents' code reads options from",
        "not published: MDAgents' code reads data/symcat/test.jsonl, which github.com/mitmedialab/MDAgents does not ship",
        "not verified (no released file; SymCat's own data was symcat.com's)",
        "unknown",
        "symcat",
        "medres import symcat_test.jsonl --format symcat --out symcat.jsonl",
        "not verified: no file found on 2026-11-29 in MDAgents' repository (commit 3adbd76) nor Cancer-Myth's; MDAgents points to "
        "github.com/teliov/SymCat-to-synthea, whose issue #18 says SymCat is no longer accessible; Cancer-Myth cites NLICE "
        "(Al-Ars et al., 2023), which publishes no question file either. The reader's row shape is MDAgents' MedQA rows, not a "
        "confirmed SymCat release",
    ),
    Dataset(
        "vanderbilt-abbreviations",
        "inventory",
        "Vanderbilt clinic-note and discharge-summary abbreviation inventories (sources of the Medical Abbreviation and Acronym "
        "Meta-Inventory, Grossman Liu et al. 2021): vanderbilt_clinic_notes.txt and vanderbilt_discharge_sums.txt, each imported "
        "into the folder `medres build noise --abbreviations DIR` reads",
        "https://github.com/lisavirginia/clinical-abbreviations",
        "CC-BY-4.0 (licence file of the tested copy)",
        "67,990 + 61,557 bytes (TSV: abbreviation, sense, variation, CUI, frequency)",
        "abbreviations",
        "medres import vanderbilt_clinic_notes.txt --out abbreviations/",
        "download page from the Meta-Inventory paper (Sci Data 8:149); its path inside the repository not verified; checksums of the copy this project tested",
        {
            "vanderbilt_clinic_notes.txt": "70824585e716d868e918635efb48da5864e4ba48015d56cfe4d8803749b1f957",
            "vanderbilt_discharge_sums.txt": "6b09e107f7298180e6e69b6074926c59a19ce1e2773368b99a2a9ed29e23ec10",
        },
    ),
)


def get(name: str) -> Dataset:
    for d in CATALOG:
        if d.name == name:
            return d
    raise ConfigError("dataset", f"unknown dataset {name!r} (medres datasets lists them: {', '.join(d.name for d in CATALOG)})")


def known_file(path: Path | str) -> tuple[Dataset, str] | None:
    """(dataset, expected SHA-256) when the file's name is one the catalog knows, else None."""
    name = Path(path).name
    for d in CATALOG:
        if name in d.files:
            return d, d.files[name]
    return None
