"""The MedMisBench release layout, as the study's code reads it: one flat row per item,

    id, question, answer, opa, opb, ..., injecta, injectb, ..., injection_content, injection_provenance

`answer` is an option letter, or a digit where the options are numbered 1, 2, 3, ... (MedJourney,
some HLE rows); `opX` holds option X's text and `injectX` its context sentence (the truthful one
for the gold option, a misleading one for each distractor); the source dataset is the config's
name (MEDMISQA, MEDMISMCQA, MEDMISXPERTQA, MEDMISJOURNEY, MEDMISHLE). Where the `op*` fields
are empty the options are inside the question as "(A) text (B) text ..." and are parsed from it.
The content and provenance labels are accepted in the study code's and in its paper's spelling.

Read from JSON lines, Parquet (how a Hugging Face dataset is stored) or a folder with one file
per config (the config is the file's or its folder's name). A row whose sentence for an option
is missing keeps its other probes (its Type 1 probes for the options that have a sentence; no
Type 2, which needs them all) and the gap is counted in the suite's manifest, not fatal.

Writing gives the same layout back: every row field by field as it was read (label spelling, id
type, inline options, empty columns), and for suites built here the study code's labels."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....records import LETTERS, NUMBERS, Item, SuiteManifest
from ....runtime.errors import ConfigError, InputError
from ....runtime.fileio import atomic_write, dump_line, iter_parquet_rows, json_lines, sha256_file, show, write_parquet_table
from ....runtime.seeding import rng_for
from ....sources._common import IdChecker, build_item, text_field
from ....suite import Suite
from ..bundles import bundle_id_for, bundle_of
from ..probe import ContextSentence, probes_of
from ..probe import MisleadingProbe as Probe
from ..taxonomy import CONTENT_TYPE_KEYS, PROVENANCE_KEYS, content_type_key, provenance_key

FORMAT = "medmisbench"
#: beside exported files whose names are not a study config: {file name: config}
CONFIG_FILE = "configs.json"
#: config name -> source dataset
CONFIGS = {"MEDMISQA": "medqa", "MEDMISMCQA": "medmcqa", "MEDMISXPERTQA": "medxpertqa", "MEDMISJOURNEY": "medjourney", "MEDMISHLE": "hle"}
SOURCE_CONFIG = {v: k for k, v in CONFIGS.items()}
OPTION_FIELDS = tuple(f"op{c}" for c in "abcdefghij")
INJECT_FIELDS = tuple(f"inject{c}" for c in "abcdefghij")
#: keys whose presence in a row marks this layout (format detection)
MARK_KEYS = ("injecta", "injection_content", "injection_provenance")
#: the study code's labels (its paper writes "Threshold / Reference Corruption", "Spurious Anchoring",
#: "Authority (Guideline / Discharge Note / SOP)"; both are read)
STUDY_CONTENT_LABELS = dict(
    zip(
        CONTENT_TYPE_KEYS,
        ("Relationship & Sequence Inversion", "Parameter & Threshold Shift", "Cue Remapping", "Spurious Cue Anchoring", "Exception Poisoning"),
    )
)
STUDY_PROVENANCE_LABELS = dict(
    zip(PROVENANCE_KEYS, ("Neutral False Statement", "Patient Self-Diagnosis / Belief / Claim", "Authority (Guideline, Discharge Note, SOP)"))
)
ROW_FIELDS = ("id", "question", "answer", *OPTION_FIELDS, *INJECT_FIELDS, "injection_content", "injection_provenance")

_INLINE = re.compile(r"\(\s*([A-J]|[1-9])\s*\)")


def config_of(name: str) -> str | None:
    """The config a file or folder name stands for (MEDMISQA.jsonl, medmisqa, MEDMISQA-test...)."""
    up = re.sub(r"[^A-Z]", "", name.upper().split("-")[0].split(".")[0])
    return up if up in CONFIGS else None


def parse_inline_options(question: str) -> tuple[str, dict[str, str]] | None:
    """(stem, {label: text}) from "stem (A) text (B) text ..." (or (1) (2) ...); None when the
    question holds no run of consecutive labels starting at A or 1."""
    marks = list(_INLINE.finditer(question))
    for start in range(len(marks)):
        first = marks[start].group(1)
        if first not in ("A", "1"):
            continue
        labels = LETTERS if first == "A" else NUMBERS
        run = [marks[start]]
        for m in marks[start + 1 :]:
            if len(run) < len(labels) and m.group(1) == labels[len(run)]:
                run.append(m)
        if len(run) < 2:
            continue
        opts = {}
        for i, m in enumerate(run):
            end = run[i + 1].start() if i + 1 < len(run) else len(question)
            opts[m.group(1)] = question[m.end() : end].strip()
        if all(opts.values()):
            return question[: run[0].start()].strip(), opts
    return None


@dataclass
class FlatRow:
    """One parsed row: its item, its bundle (option label -> sentence, gaps left out) and labels."""

    line: int | None
    item: Item
    content_type: str
    provenance: str
    contexts: dict[str, str]
    gaps: list[str] = field(default_factory=list)

    def probes(self, seed: int) -> list[Probe]:
        """One Type 1 probe per wrong option with a sentence (the seeded sample drawn among all
        wrong options, so a gap does not move it) and, when no sentence is missing, one Type 2
        probe with the bundle in a seeded order (the study's option order is a delivery option)."""
        item, bid = self.item, bundle_id_for(self.item.id, self.content_type, self.provenance)
        sampled = rng_for(seed, bid, "type1-target").choice(item.wrong_options)
        common = dict(item_id=item.id, bundle_id=bid, content_type=self.content_type, provenance=self.provenance)
        out = [
            Probe(
                id=f"{bid}:t1:{w}", condition="type1", target=w, sampled=(w == sampled), context=(ContextSentence(option=w, text=self.contexts[w]),), **common
            )
            for w in item.wrong_options
            if w in self.contexts
        ]
        if not self.gaps:
            order = list(item.choices)
            rng_for(seed, bid, "type2-order").shuffle(order)
            out.append(Probe(id=f"{bid}:t2", condition="type2", context=tuple(ContextSentence(option=k, text=self.contexts[k]) for k in order), **common))
        return out


def _label(value: object, path: Path | str, line: int | None, key: str, normalise) -> tuple[str, str]:
    text = text_field(value, path, line, key)
    try:
        return normalise(text), text
    except ValueError as e:
        raise InputError(path, line, key, str(e)) from None


def flat_row(obj: dict[str, Any], config: str, path: Path | str = "<release>", line: int | None = None) -> FlatRow:
    """One row of the release layout -> FlatRow; errors name the file, row and field."""
    raw_id = obj.get("id")
    row_id = text_field(raw_id, path, line, "id", numbers=True)
    question_raw = text_field(obj.get("question"), path, line, "question")
    answer_raw = obj.get("answer")
    answer = text_field(answer_raw, path, line, "answer", numbers=True).upper()
    numbered = answer.isdigit()
    present = [k for k in OPTION_FIELDS if k in obj]
    texts = [(k, obj[k]) for k in OPTION_FIELDS if isinstance(obj.get(k), (str, int, float)) and str(obj[k]).strip()]
    inline = None
    if texts:
        labels = (NUMBERS if numbered else LETTERS)[: len(texts)]
        if [k for k, _ in texts] != list(OPTION_FIELDS[: len(texts)]):
            raise InputError(path, line, texts[-1][0], "options must fill opa, opb, ... without holes")
        options = {lab: text_field(v, path, line, k, numbers=True) for lab, (k, v) in zip(labels, texts)}
        question = question_raw
    else:
        inline = parse_inline_options(question_raw)
        if inline is None:
            raise InputError(path, line, "question", "no options: the op* fields are empty and the question holds no '(A) text (B) text' options")
        question, options = inline
        if numbered != (next(iter(options)) == "1"):
            raise InputError(path, line, "answer", f"{show(answer_raw)} does not match the question's option labels {', '.join(options)}")
    if answer not in options:
        raise InputError(path, line, "answer", f"{show(answer_raw)} is not one of the options {', '.join(options)}")
    content_type, content_label = _label(obj.get("injection_content"), path, line, "injection_content", content_type_key)
    provenance, provenance_label = _label(obj.get("injection_provenance"), path, line, "injection_provenance", provenance_key)
    contexts: dict[str, str] = {}
    gaps: list[str] = []
    for lab, key in zip(options, INJECT_FIELDS):
        v = obj.get(key)
        if v is None or (isinstance(v, str) and not v.strip()):
            gaps.append(lab)
        elif not isinstance(v, str):
            raise InputError(path, line, key, f"expected a sentence, got {show(v)}")
        else:
            contexts[lab] = v.strip()
    for key in INJECT_FIELDS[len(options) :]:
        if isinstance(obj.get(key), str) and obj[key].strip():
            raise InputError(path, line, key, f"a sentence for an option the row does not have ({len(options)} options)")
    known = {*ROW_FIELDS, "config"}
    release = {
        "config": config,
        "id": raw_id,
        "answer": answer_raw,
        "op_fields": len(present),
        "inject_fields": sum(k in obj for k in INJECT_FIELDS),
        "content_label": content_label,
        "provenance_label": provenance_label,
        "empty": {
            k: obj[k]
            for k in (*OPTION_FIELDS, *INJECT_FIELDS)
            if k in obj and not (isinstance(obj[k], str) and obj[k].strip()) and not isinstance(obj[k], (int, float))
        },
        "extra": {k: v for k, v in obj.items() if k not in known},
    }
    if inline is not None:
        release["question"] = question_raw
    if gaps and answer in contexts:
        release["truth"] = contexts[answer]  # no Type 2 probe carries it: kept for the export
    source = CONFIGS.get(config, config.lower())
    item = build_item(path, line, id=f"{config}/{row_id}", source=source, question=question, options=options, answer=answer, meta={"release": release})
    return FlatRow(line, item, content_type, provenance, contexts, gaps)


def rows_of_file(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, row) of one release file, parquet or JSON lines."""
    if path.suffix.lower() == ".parquet":
        yield from iter_parquet_rows(path)
    else:
        yield from json_lines(path)


def listed_configs(folder: Path) -> dict[str, str]:
    """file name -> config, from the CONFIG_FILE an export wrote beside files whose names are not
    one of the study's configs ({} without one)."""
    try:
        listed = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v).upper() for k, v in listed.items()} if isinstance(listed, dict) else {}


def release_files(path: Path | str, config: str | None = None) -> list[tuple[Path, str]]:
    """(file, config) pairs of a release: one file, or a folder with one file per config. A file's
    config is its name's (MEDMISQA.jsonl), its folder's, or the one CONFIG_FILE beside it lists."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_file():
        cfg = config or config_of(path.stem) or config_of(path.parent.name) or listed_configs(path.parent).get(path.name)
        if cfg is None:
            raise ConfigError("--config", f"cannot tell the config of {path} from its name; name it (one of {', '.join(CONFIGS)})")
        return [(path, cfg.upper())]
    found = []
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix.lower() in (".jsonl", ".json", ".parquet") and f.name != CONFIG_FILE:
            cfg = config_of(f.stem) or config_of(f.parent.name) or listed_configs(f.parent).get(f.name)
            if cfg is not None:
                found.append((f, cfg))
    if not found:
        raise InputError(path, None, None, f"no release files in this folder (one file per config: {', '.join(CONFIGS)})")
    return found


def iter_flat(path: Path | str, config: str | None = None) -> Iterator[FlatRow]:
    """Stream the rows of a release (file or folder); ids are unique per config."""
    for f, cfg in release_files(path, config):
        ids = IdChecker(f)
        for n, obj in rows_of_file(f):
            row = flat_row(obj, cfg, f, n)
            ids.check(row.item.id, n, "id")
            yield row


def is_flat(keys: Iterable[str]) -> bool:
    return bool(set(keys) & set(MARK_KEYS))


def read_flat_items(path: Path | str) -> Iterator[Item]:
    for row in iter_flat(path):
        yield row.item


def read_medmisbench(path: Path | str, seed: int = 0, name: str | None = None, config: str | None = None) -> Suite:
    """A Suite from a release in the study's flat layout (file or folder of configs)."""
    path = Path(path)
    items: list[Item] = []
    probes: list[Probe] = []
    gaps: Counter[str] = Counter()
    per_config: Counter[str] = Counter()
    for row in iter_flat(path, config):
        items.append(row.item)
        probes += row.probes(seed)
        per_config[row.item.meta["release"]["config"]] += 1
        if row.gaps:
            gaps["rows"] += 1
            gaps["sentences"] += len(row.gaps)
    files = release_files(path, config)
    manifest = SuiteManifest(
        name=name or path.stem,
        seed=seed,
        family="misleading",
        counts={"items": len(items), "configs": dict(per_config), "gap_rows": gaps["rows"], "missing_sentences": gaps["sentences"]},
        description=f"read from the MedMisBench release layout {path} ({len(items)} rows), seed {seed}",
        source={"format": FORMAT, "path": str(path), "files": {str(f): sha256_file(f) for f, _ in files}},
    )
    return Suite(manifest, items, probes)


# --------------------------------------------------------------------------- writing


def flat_rows(suite: Suite) -> Iterator[tuple[str, dict[str, Any]]]:
    """(config, row) per item with a bundle, in item order: the fields as they were read, or, for
    an item built here, the study code's labels and its source's config."""
    where = suite.path or f"<suite {suite.manifest.name}>"
    by_item: dict[str, list[Probe]] = {}
    for p in probes_of(suite):
        by_item.setdefault(p.item_id, []).append(p)
    for item in suite.items.values():
        ps = by_item.get(item.id)
        if not ps:
            continue
        bundles = {p.bundle_id for p in ps}
        if len(bundles) != 1:
            raise InputError(where, None, "bundle_id", f"item {show(item.id)} has {len(bundles)} bundles; the release layout holds one per item")
        rel = dict(item.meta.get("release") or {})
        sentences = bundle_of(ps)
        if rel.get("truth"):
            sentences[item.answer_letter] = rel["truth"]
        ct, pv = ps[0].content_type, ps[0].provenance
        config = rel.get("config") or SOURCE_CONFIG.get(item.source, item.source.upper())
        row: dict[str, object] = {"id": rel.get("id", item.id.split("/", 1)[-1] if "/" in item.id else item.id)}
        row["question"] = rel.get("question", item.question)
        row["answer"] = rel.get("answer", item.answer)
        n_op = rel.get("op_fields", len(item.choices))
        empty = rel.get("empty", {})
        labels = list(item.choices)
        for i, key in enumerate(OPTION_FIELDS[:n_op]):
            row[key] = empty[key] if key in empty else ("" if "question" in rel else item.choices[labels[i]]) if i < len(labels) else ""
        if "question" not in rel and n_op < len(labels):
            raise InputError(where, None, "options", f"item {show(item.id)} has more options than op columns")
        n_inj = rel.get("inject_fields", len(labels))
        for i, key in enumerate(INJECT_FIELDS[:n_inj]):
            lab = labels[i] if i < len(labels) else None
            row[key] = empty[key] if key in empty else (sentences.get(lab, "") if lab else "")
        row["injection_content"] = rel.get("content_label", STUDY_CONTENT_LABELS[ct])
        row["injection_provenance"] = rel.get("provenance_label", STUDY_PROVENANCE_LABELS[pv])
        row.update(rel.get("extra", {}))
        yield config, row


def write_medmisbench(suite: Suite, path: Path | str, fmt: str = "jsonl") -> int:
    """Write a suite in the release layout: one file (a single config; JSON lines or Parquet by
    `fmt`), or a folder with one file per config when `path` has no suffix. Atomic per file."""
    path = Path(path)
    groups: dict[str, list[dict[str, Any]]] = {}
    for config, row in flat_rows(suite):
        groups.setdefault(config, []).append(row)
    ext = ".parquet" if fmt == "parquet" else ".jsonl"
    if path.suffix:
        if len(groups) > 1:
            raise ConfigError("--out", f"the suite holds {len(groups)} configs ({', '.join(groups)}): give a folder, one file per config is written")
        targets = {next(iter(groups), "MEDMISQA"): path}
    else:
        targets = {cfg: path / f"{cfg}{ext}" for cfg in groups}
    n = 0
    for cfg, target in targets.items():
        rows = groups.get(cfg, [])
        if fmt == "parquet":
            _write_parquet(rows, target)
        else:
            with atomic_write(target) as fh:
                for r in rows:
                    fh.write(dump_line(r))
        n += len(rows)
    # a file whose name does not tell its config (a suite built from other sources) is listed
    # beside it, so that `medres import` reads back what was written without --config
    unnamed = {t.name: cfg for cfg, t in targets.items() if config_of(t.stem) != cfg and config_of(t.parent.name) != cfg}
    if unnamed:
        folder = next(iter(targets.values())).parent
        with atomic_write(folder / CONFIG_FILE) as fh:
            fh.write(json.dumps({**listed_configs(folder), **unnamed}, indent=2, sort_keys=True) + "\n")
    return n


def _write_parquet(rows: Sequence[Mapping[str, object]], target: Path) -> None:
    import pyarrow as pa

    columns = list(dict.fromkeys(k for r in rows for k in r)) or list(ROW_FIELDS)
    table = pa.Table.from_pylist(rows, schema=None) if rows else pa.table({c: pa.array([], pa.string()) for c in columns})
    write_parquet_table(target, table.select(columns))
