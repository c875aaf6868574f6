"""The Cancer-Myth files, read into suites and written back.

Layouts (`medres import FILE --format NAME`, or told apart by their keys with `--format auto`):

- `cancer-myth`: the study's release, one row per question: QID, question,
  presupposition_correction, category, from_model, cancer, source (where the myth came from),
  source_myth (the myth). Each row is an item (id: the QID; reference: the correction) with one
  `presupposition` probe whose facets are the category key and the normalised generator.
- `cancer-myth-nfp`: the no-false-presupposition control set: example_question, source_type,
  source_row (1-based row in the myth file), from_model, source_cancer, QID (1000-1149). Each row
  is an item without a reference and one `nfp` probe. With the myth file (`myths=PATH`,
  `medres import ... --myths FILE`) each item's meta also holds the myth and fact of its row.
- `cancer-myth-candidates`: the generated questions before physician validation
  (all_data_before_validation.json: example_question, example_assumption, source_row,
  source_type, source_info{cancer, myth, fact, source}, category, from_model, raw_QID). Each row
  is a presupposition item (id `raw-<raw_QID>`, reference: example_assumption, the correction).
  A raw_QID met again gets `-2`, `-3`, ... in file order (counted in the manifest).
- `myths`: the myth file itself (myths.read_myths); `myth_records` yields the normalised myth list
  that `medres build presupposition --myths` reads.

Files may be JSON lines, a JSON array (pretty-printed or not), a stream of pretty-printed objects,
or Parquet. An item's meta holds what the row says about its myth under one set of names for
every layout: cancer, myth, fact, myth_source (the myth's URL), source_row, source_type; and under
`release` the row's own values (QID, category and from_model as spelled, unknown columns) so that
`export_suite` writes the row back as it was read. Every bad row is an InputError naming the file,
the line where the row starts (Parquet: the row number) and the field; an unknown category names
the known ones."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ....records import Item, SuiteManifest
from ....runtime.errors import ConfigError, InputError, MedresError
from ....runtime.fileio import iter_rows, json_values, sha256_file, show, write_jsonl, write_parquet_table
from ....sources._common import IdChecker, text_field
from ....suite import Suite
from ..probe import PresuppositionProbe, probe_id
from ..taxonomy import CATEGORY_KEYS, FAMILY, NFP, PRESUPPOSITION, category_key, generator_name
from .myths import Myth, read_myths

__all__ = [
    "CANDIDATE_FIELDS",
    "EXPORT_FORMATS",
    "NFP_FIELDS",
    "READERS",
    "RELEASE_FIELDS",
    "STUDY_SPELLING",
    "detect",
    "export_suite",
    "myth_records",
    "read_candidates",
    "read_nfp",
    "read_release",
    "release_rows",
]

SOURCE = "cancer-myth"
RELEASE_FIELDS = ("QID", "question", "presupposition_correction", "category", "from_model", "cancer", "source", "source_myth")
NFP_FIELDS = ("example_question", "source_type", "source_row", "from_model", "source_cancer", "QID")
CANDIDATE_FIELDS = ("example_question", "example_assumption", "source_row", "source_type", "source_info", "category", "from_model", "raw_QID")
MYTH_FIELDS = ("cancer", "myth", "fact", "source")
EXPORT_FORMATS = ("cancer-myth", "parquet")

#: how the study's files spell each category (all_data_before_validation.json), written on export
STUDY_SPELLING = {
    "only_standard_treatment": "only/standard treatment",
    "no_treatment": "no treatment",
    "inevitable_side_effect": "inevitable side effect",
    "causal_misattribution": "causal misattribution",
    "underestimated_risk": "underestimate risk",
    "no_symptom_no_disease": "no symptoms means no disease",
    "other": "other",
}

# --------------------------------------------------------------------------- reading rows

#: how much of a file detection reads at most to find its first row
DETECT_LIMIT = 8 << 20


# --------------------------------------------------------------------------- fields


def _optional_text(obj: Mapping[str, object], key: str, path: Path, line: int | None) -> str | None:
    v = obj.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    return text_field(v, path, line, key)


def _qid(obj: Mapping[str, object], key: str, path: Path, line: int | None) -> int | str:
    v = obj.get(key)
    if v is None:
        raise InputError(path, line, key, "is missing")
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise InputError(path, line, key, f"expected a number or text, got {show(v)}")
    if isinstance(v, float):
        if not v.is_integer():
            raise InputError(path, line, key, f"expected a whole number, got {v}")
        return int(v)
    if isinstance(v, str):
        v = v.strip()
        if not v:
            raise InputError(path, line, key, "is blank")
    return v


def _row_number(obj: Mapping[str, object], key: str, path: Path, line: int | None) -> int | None:
    """A 1-based row of the myth file; None when missing or negative (the study writes -1 for a
    question written by hand)."""
    v = obj.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(path, line, key, f"expected a row number, got {show(v)}")
    if v == 0:
        raise InputError(path, line, key, "is 0; rows of the myth file are counted from 1 (-1: no row)")
    return v if v > 0 else None


def _category(obj: Mapping[str, object], key: str, path: Path, line: int | None) -> str:
    raw = text_field(obj.get(key), path, line, key)
    try:
        found = category_key(raw)
    except ValueError as e:
        raise InputError(path, line, key, str(e)) from None
    assert found is not None
    return found


def _item_id(qid: int | str) -> str:
    return str(qid)


def _drop_none(d: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in d.items() if v is not None}


def _extra(obj: Mapping[str, object], known: tuple[str, ...]) -> dict[str, object]:
    """The row's other columns (kept and written back; an empty one, as Parquet gives every row, is left out)."""
    return {k: v for k, v in obj.items() if k not in known and v is not None}


# --------------------------------------------------------------------------- the three layouts


def _release_row(obj: Mapping[str, object], path: Path, line: int | None) -> tuple[Item, PresuppositionProbe]:
    qid = _qid(obj, "QID", path, line)
    question = text_field(obj.get("question"), path, line, "question")
    correction = text_field(obj.get("presupposition_correction"), path, line, "presupposition_correction")
    category = _category(obj, "category", path, line)
    from_model = _optional_text(obj, "from_model", path, line)
    cancer = _optional_text(obj, "cancer", path, line)
    release = _drop_none({"QID": qid, "category": obj.get("category"), "from_model": obj.get("from_model")})
    if extra := _extra(obj, RELEASE_FIELDS):
        release["extra"] = extra
    meta = _drop_none(
        {"cancer": cancer, "myth": _optional_text(obj, "source_myth", path, line), "myth_source": _optional_text(obj, "source", path, line), "release": release}
    )
    item = Item(id=_item_id(qid), source=SOURCE, question=question, reference=correction, subject=cancer, meta=meta)
    probe = PresuppositionProbe(
        id=probe_id(item.id, PRESUPPOSITION), item_id=item.id, condition=PRESUPPOSITION, facets={"category": category, "generator": generator_name(from_model)}
    )
    return item, probe


def _nfp_row(
    obj: Mapping[str, object], path: Path, line: int | None, myths: dict[int, Myth] | None, myth_path: Path | None
) -> tuple[Item, PresuppositionProbe]:
    qid = _qid(obj, "QID", path, line)
    question = text_field(obj.get("example_question"), path, line, "example_question")
    row = _row_number(obj, "source_row", path, line)
    from_model = _optional_text(obj, "from_model", path, line)
    cancer = _optional_text(obj, "source_cancer", path, line)
    release = _drop_none({"QID": qid, "from_model": obj.get("from_model"), "source_row": obj.get("source_row")})
    if extra := _extra(obj, NFP_FIELDS):
        release["extra"] = extra
    meta: dict[str, object] = _drop_none({"cancer": cancer, "source_row": row, "source_type": _optional_text(obj, "source_type", path, line)})
    if myths is not None and row is not None:
        myth = myths.get(row)
        if myth is None:
            raise InputError(path, line, "source_row", f"row {row} is not in the myth file {myth_path} ({len(myths)} rows)")
        meta.update(_drop_none({"myth": myth.myth, "fact": myth.fact, "myth_source": myth.source or None}))
        meta.setdefault("cancer", myth.cancer)
    meta["release"] = release
    item = Item(id=_item_id(qid), source=SOURCE, question=question, subject=meta.get("cancer"), meta=meta)
    probe = PresuppositionProbe(id=probe_id(item.id, NFP), item_id=item.id, condition=NFP, facets={"generator": generator_name(from_model)})
    return item, probe


def _candidate_row(obj: Mapping[str, object], path: Path, line: int | None, item_id: str) -> tuple[Item, PresuppositionProbe]:
    question = text_field(obj.get("example_question"), path, line, "example_question")
    correction = text_field(obj.get("example_assumption"), path, line, "example_assumption")
    category = _category(obj, "category", path, line)
    from_model = _optional_text(obj, "from_model", path, line)
    info = obj.get("source_info")
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise InputError(path, line, "source_info", f"expected an object with cancer, myth, fact, source, got {show(info)}")
    facts = {k: _optional_text(info, k, path, line) for k in MYTH_FIELDS}
    release = _drop_none(
        {"raw_QID": obj.get("raw_QID"), "category": obj.get("category"), "from_model": obj.get("from_model"), "source_row": obj.get("source_row")}
    )
    if extra := _extra(obj, CANDIDATE_FIELDS):
        release["extra"] = extra
    meta = _drop_none(
        {
            "cancer": facts["cancer"],
            "myth": facts["myth"],
            "fact": facts["fact"],
            "myth_source": facts["source"],
            "source_row": _row_number(obj, "source_row", path, line),
            "source_type": _optional_text(obj, "source_type", path, line),
            "release": release,
        }
    )
    item = Item(id=item_id, source=SOURCE, question=question, reference=correction, subject=facts["cancer"], meta=meta)
    probe = PresuppositionProbe(
        id=probe_id(item.id, PRESUPPOSITION), item_id=item.id, condition=PRESUPPOSITION, facets={"category": category, "generator": generator_name(from_model)}
    )
    return item, probe


def _no_config(config: str | None, fmt: str) -> None:
    if config:
        raise ConfigError("--config", f"the {fmt} layout has no configs")


def _manifest(
    path: Path,
    fmt: str,
    seed: int,
    name: str | None,
    probes: list[PresuppositionProbe],
    extra_counts: Mapping[str, object] | None = None,
    extra_source: Mapping[str, object] | None = None,
) -> SuiteManifest:
    categories = Counter(p.facets.get("category") for p in probes if p.facets.get("category"))
    generators = Counter(p.facets.get("generator") for p in probes)
    counts = {"categories": {k: categories[k] for k in CATEGORY_KEYS if categories[k]}, "generators": dict(sorted(generators.items())), **(extra_counts or {})}
    return SuiteManifest(
        name=name or path.stem,
        family=FAMILY,
        seed=seed,
        counts=counts,
        description=f"read from the Cancer-Myth {fmt} layout {path} ({len(probes)} questions)",
        source={"format": fmt, "path": str(path), "sha256": sha256_file(path), **(extra_source or {})},
    )


def read_release(path: Path | str, seed: int = 0, name: str | None = None, config: str | None = None, myths: Path | str | None = None, **_: object) -> Suite:
    """A suite from the study's release layout (one presupposition probe per question)."""
    path = Path(path)
    _no_config(config, "cancer-myth")
    if myths is not None:
        raise ConfigError("--myths", "the cancer-myth release layout does not point into a myth file (the NFP layout does)")
    items, probes = [], []
    ids = IdChecker(path, "QID", "QID")
    for line, obj in iter_rows(path):
        item, probe = _release_row(obj, path, line)
        ids.check(item.id, line)
        items.append(item)
        probes.append(probe)
    _nonempty(path, items)
    return Suite(_manifest(path, "cancer-myth", seed, name, probes), items, probes)


def _myth_rows(myths: Path | str) -> dict[int, Myth]:
    return {m.row: m for m in read_myths(myths)}


def read_nfp(path: Path | str, seed: int = 0, name: str | None = None, config: str | None = None, myths: Path | str | None = None, **_: object) -> Suite:
    """A suite from the NFP control layout (one `nfp` probe per question); with `myths` (the myth
    file its source_row counts in) each item's meta gets the myth and fact of its row."""
    path = Path(path)
    _no_config(config, "cancer-myth-nfp")
    table = _myth_rows(myths) if myths is not None else None
    items, probes = [], []
    ids = IdChecker(path, "QID", "QID")
    for line, obj in iter_rows(path):
        item, probe = _nfp_row(obj, path, line, table, Path(myths) if myths is not None else None)
        ids.check(item.id, line)
        items.append(item)
        probes.append(probe)
    _nonempty(path, items)
    source = {"myths": str(myths), "myths_sha256": sha256_file(myths)} if myths is not None else None
    return Suite(_manifest(path, "cancer-myth-nfp", seed, name, probes, extra_source=source), items, probes)


def read_candidates(path: Path | str, seed: int = 0, name: str | None = None, config: str | None = None, myths: Path | str | None = None, **_: object) -> Suite:
    """A suite from the questions generated before validation (every one a presupposition probe).
    Item ids are `raw-<raw_QID>`; a raw_QID met again gets `-2`, `-3`, ... in file order."""
    path = Path(path)
    _no_config(config, "cancer-myth-candidates")
    if myths is not None:
        raise ConfigError("--myths", "the candidates layout carries its myths (source_info); it takes no myth file")
    items, probes = [], []
    seen: Counter[str] = Counter()
    taken: set[str] = set()
    duplicates = 0
    for line, obj in iter_rows(path):
        raw = str(_qid(obj, "raw_QID", path, line))
        seen[raw] += 1
        item_id = f"raw-{raw}" if seen[raw] == 1 else f"raw-{raw}-{seen[raw]}"
        duplicates += seen[raw] > 1
        while item_id in taken:  # a raw_QID that itself reads like 'N-2'
            item_id += "+"
        taken.add(item_id)
        item, probe = _candidate_row(obj, path, line, item_id)
        items.append(item)
        probes.append(probe)
    _nonempty(path, items)
    return Suite(_manifest(path, "cancer-myth-candidates", seed, name, probes, {"duplicate_raw_qids": duplicates}), items, probes)


def _nonempty(path: Path, items: list[Item]) -> None:
    if not items:
        raise InputError(path, None, None, "holds no rows")


def myth_records(path: Path | str) -> Iterator[Myth]:
    """The myths of a myth file (any layout read_myths reads), as the normalised list
    (myths.write_myths writes the same records)."""
    yield from read_myths(path)


READERS = {"cancer-myth": read_release, "cancer-myth-nfp": read_nfp, "cancer-myth-candidates": read_candidates}

# --------------------------------------------------------------------------- detection


def _layout(keys: set[str]) -> str | None:
    if {"QID", "question", "presupposition_correction"} <= keys:
        return "cancer-myth"
    if {"example_question", "example_assumption", "raw_QID"} <= keys:
        return "cancer-myth-candidates"
    if {"example_question", "QID"} <= keys and keys & {"source_row", "source_cancer"} and "example_assumption" not in keys:
        return "cancer-myth-nfp"
    if {"cancer", "myth", "fact"} <= keys:
        return "myths"
    return None


def _first_keys(path: Path) -> set[str] | None:
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return set(pq.read_schema(path).names)
    with path.open("rb") as fh:
        head = fh.read(DETECT_LIMIT)
    text = head.decode("utf-8-sig", errors="replace")
    for _, value in json_values(path, text):  # a row cut at the limit raises, and detection says None
        return set(value) if isinstance(value, dict) else None
    return None


def detect(path: Path | str) -> str | None:
    """The Cancer-Myth layout a file holds (`cancer-myth`, `cancer-myth-nfp`,
    `cancer-myth-candidates`, `myths`) told by the keys of its first row; None for anything else,
    never an error."""
    path = Path(path)
    try:
        if not path.is_file():
            return None
        keys = _first_keys(path)
    except (MedresError, OSError, ValueError, UnicodeError):
        return None
    except Exception:  # pyarrow's errors on a file that is not Parquet
        return None
    return _layout(keys) if keys else None


# --------------------------------------------------------------------------- writing back


def _category_spelling(item: Item, probe: PresuppositionProbe) -> str | None:
    rel = item.meta.get("release") or {}
    key = probe.facets.get("category")
    if rel.get("category") is not None and key is not None and category_key(str(rel["category"])) == key:
        return rel["category"]
    return STUDY_SPELLING.get(key) if key else None


def _from_model(item: Item, probe: PresuppositionProbe) -> str | None:
    rel = item.meta.get("release") or {}
    gen = probe.facets.get("generator")
    if rel.get("from_model") is not None and generator_name(rel["from_model"]) == gen:
        return rel["from_model"]
    return None if gen in (None, "unknown") else gen


def _qid_of(item: Item) -> int | str:
    rel = item.meta.get("release") or {}
    if "QID" in rel:
        return rel["QID"]
    if "raw_QID" in rel and item.id == f"raw-{rel['raw_QID']}":
        return rel["raw_QID"]
    return int(item.id) if item.id.isdigit() and str(int(item.id)) == item.id else item.id


def release_rows(suite: Suite) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(release rows, NFP rows) of a suite, in item order: the fields as they were read, or, for
    questions built here, the study's spellings."""
    where = suite.path or f"<suite {suite.manifest.name}>"
    by_item: dict[str, list[PresuppositionProbe]] = {}
    for p in suite.probes:
        by_item.setdefault(p.item_id, []).append(p)  # type: ignore[arg-type]
    rows: list[dict[str, object]] = []
    nfp: list[dict[str, object]] = []
    for item in suite.items.values():
        for probe in by_item.get(item.id, []):
            rel = item.meta.get("release") or {}
            meta = item.meta
            if probe.condition == PRESUPPOSITION:
                if not (item.reference or "").strip():
                    raise InputError(where, None, "reference", f"item {show(item.id)} has no correction to write as presupposition_correction")
                row = {
                    "QID": _qid_of(item),
                    "question": item.question,
                    "presupposition_correction": item.reference,
                    "category": _category_spelling(item, probe),
                    "from_model": _from_model(item, probe),
                    "cancer": meta.get("cancer"),
                    "source": meta.get("myth_source"),
                    "source_myth": meta.get("myth"),
                }
                rows.append({**row, **(rel.get("extra") or {})})
            elif probe.condition == NFP:
                row = {
                    "example_question": item.question,
                    "source_type": meta.get("source_type"),
                    "source_row": rel.get("source_row", meta.get("source_row")),
                    "from_model": _from_model(item, probe),
                    "source_cancer": meta.get("cancer"),
                    "QID": _qid_of(item),
                }
                nfp.append({**row, **(rel.get("extra") or {})})
    return rows, nfp


def _nfp_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}-nfp{path.suffix}")


def _write_parquet(path: Path, rows: Sequence[Mapping[str, object]], fields: tuple[str, ...]) -> None:
    import pyarrow as pa

    columns: dict[str, list[object]] = {f: [] for f in fields}
    for r in rows:
        for k in r:
            columns.setdefault(k, [])
    for r in rows:
        for k, col in columns.items():
            col.append(r.get(k))
    arrays = {}
    for k, values in columns.items():
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            arrays[k] = pa.array(values, type=pa.int64())
        elif all(isinstance(v, str) for v in present):
            arrays[k] = pa.array(values, type=pa.string())
        else:  # mixed or nested values (an id column with numbers and text, an unknown column): as JSON text
            arrays[k] = pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values], type=pa.string())
    write_parquet_table(path, pa.table(arrays))


def export_suite(suite: Suite, path: Path | str, fmt: str = "cancer-myth") -> int:
    """Write a suite in the study's layout: `cancer-myth` as JSON lines, `parquet` as Parquet (the
    same columns). Presupposition questions go to `path`; NFP questions to `path` when the suite
    holds only those, else beside it as `<stem>-nfp<suffix>`. Returns the number of rows."""
    if fmt not in EXPORT_FORMATS:
        raise ConfigError("--format", f"unknown format '{fmt}' for a presupposition suite (one of: {', '.join(EXPORT_FORMATS)})")
    path = Path(path)
    rows, nfp = release_rows(suite)
    if not rows and not nfp:
        raise ConfigError("--suite", "the suite holds no presupposition or NFP questions to write")
    targets: list[tuple[Path, list[dict[str, Any]], tuple[str, ...]]] = [(path, rows, RELEASE_FIELDS)] if rows else []
    if nfp:
        targets.append((_nfp_path(path) if rows else path, nfp, NFP_FIELDS))
    for target, data, fields in targets:
        if fmt == "parquet":
            _write_parquet(target, data, fields)
        else:
            write_jsonl(target, data)
    return len(rows) + len(nfp)
