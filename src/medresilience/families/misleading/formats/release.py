"""MedMisBench-release-style files: one JSON object per line, one row per context bundle.

Our layout (also the one of the project's bundled sample data)::

    {"id": ..., "source_dataset": "medqa", "subject": ... (optional), "question": ...,
     "options": {"A": ..., ...}, "answer": "B", "content_type": "threshold_corruption",
     "provenance": "authority", "option_contexts": {"A": sentence, "B": sentence, ...}}

Optional fields written by `write_release` so that a suite survives the trip unchanged:
``item_id`` (when one item has several bundles, each row's id is its bundle id and item_id names
the item), ``bundle_id`` (only when it is not the one the row implies), ``meta`` (the item's meta)
and ``bundle_meta`` (the meta of the bundle's probes). Other field names a real release may use
are listed in RELEASE_ALIASES; any other field is kept in the item's meta.

Options may also be a list (lettered A, B, ...), option contexts a list aligned with the options,
and the answer the text of an option instead of its letter. Probes are made from each row's bundle
by bundles.probes_from_bundle with the given seed, so the same file and seed give the same suite."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....records import LETTERS, Item, SuiteManifest
from ....runtime.errors import InputError
from ....runtime.fileio import json_lines, sha256_file, show, write_jsonl
from ....runtime.seeding import stable_hash
from ....sources._common import IdChecker, build_item, text_field
from ....suite import Suite
from ..bundles import bundle_id_for, bundle_of, check_bundle, probes_from_bundle
from ..probe import MisleadingProbe as Probe
from ..probe import probes_of
from ..taxonomy import content_type_key, provenance_key

__all__ = [
    "FORMAT",
    "RELEASE_ALIASES",
    "ReleaseRow",
    "iter_release",
    "read_release",
    "read_release_items",
    "release_row",
    "release_rows",
    "write_release",
]

FORMAT = "medmisbench"

# canonical field -> the names it may have in a file, canonical first. One table for all aliases.
RELEASE_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "item_id": ("item_id",),
    "bundle_id": ("bundle_id",),
    "source_dataset": ("source_dataset", "dataset", "source", "source_name"),
    "subject": ("subject", "subject_name"),
    "question": ("question", "source_question"),
    "options": ("options", "choices"),
    "answer": ("answer", "correct_answer", "answer_idx", "gold"),
    "content_type": ("content_type", "selected_content_type"),
    "provenance": ("provenance", "sampled_provenance", "selected_provenance"),
    "option_contexts": ("option_contexts", "contexts", "option_aligned_contexts"),
    "meta": ("meta",),
    "bundle_meta": ("bundle_meta",),
}
_CANONICAL = {alias: canon for canon, aliases in RELEASE_ALIASES.items() for alias in aliases}
# keys whose presence in a JSON object marks a release row (used by format detection)
CONTEXT_KEYS: tuple[str, ...] = RELEASE_ALIASES["option_contexts"]


@dataclass(frozen=True)
class ReleaseRow:
    """One parsed row: its item and one context bundle (option letter -> sentence)."""

    line: int | None
    row_id: str
    item: Item
    bundle_id: str
    content_type: str
    provenance: str
    contexts: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)

    def probes(self, seed: int) -> list[Probe]:
        return probes_from_bundle(self.item, self.contexts, self.content_type, self.provenance, seed, bundle_id=self.bundle_id, meta=self.meta)


# --------------------------------------------------------------------------- reading


def _resolve(
    obj: Mapping[str, object], path: Path | str, line: int | None
) -> tuple[dict[str, tuple[str, object]], dict[str, object], list[tuple[str, object]]]:
    """Map file keys to canonical fields. Returns (canonical -> (file key, value)), the unknown
    fields, and every (key, value) given for the answer (checked for agreement later)."""
    found: dict[str, list[tuple[str, object]]] = {}
    extra: dict[str, object] = {}
    for key, value in obj.items():
        canon = _CANONICAL.get(key)
        if canon is None:
            extra[key] = value
        elif value is not None:
            found.setdefault(canon, []).append((key, value))
    fields: dict[str, tuple[str, object]] = {}
    for canon, given in found.items():
        given.sort(key=lambda kv: RELEASE_ALIASES[canon].index(kv[0]))
        if canon != "answer":
            for key, value in given[1:]:
                if value != given[0][1]:
                    raise InputError(path, line, key, f"disagrees with field '{given[0][0]}' (both name the {canon})")
        fields[canon] = given[0]
    return fields, extra, found.get("answer", [])


def _letter_map(raw: object, path: Path | str, line: int | None, key: str, what: str, n: int | None = None) -> dict[str, object]:
    """A list (lettered A, B, ...) or an object keyed by letters -> {letter: value} in letter order."""
    if isinstance(raw, list):
        if n is not None and len(raw) != n:
            raise InputError(path, line, key, f"has {len(raw)} {what}, expected one per option ({n})")
        if len(raw) > len(LETTERS):
            raise InputError(path, line, key, f"has {len(raw)} {what}, at most {len(LETTERS)} are supported")
        return dict(zip(LETTERS, raw))
    if isinstance(raw, dict):
        out = {}
        for k, v in raw.items():
            letter = str(k).strip().upper()
            if len(letter) != 1 or letter not in LETTERS:
                raise InputError(path, line, key, f"key {show(k)} is not an option letter")
            if letter in out:
                raise InputError(path, line, key, f"option {letter} is given twice")
            out[letter] = v
        return dict(sorted(out.items()))
    raise InputError(path, line, key, f"expected a list or an object keyed by option letter, got {show(raw)}")


def _answer(given: list[tuple[str, object]], options: dict[str, str], path: Path | str, line: int | None) -> tuple[str, str]:
    if not given:
        raise InputError(path, line, "answer", "is missing")
    letters: list[tuple[str, str]] = []
    for key, value in given:
        if not isinstance(value, str) or not value.strip():
            raise InputError(path, line, key, f"expected an option letter or an option's text, got {show(value)}")
        v = value.strip()
        if v.upper() in options and len(v) == 1:
            letters.append((key, v.upper()))
            continue
        hits = [k for k, t in options.items() if t == v]
        if len(hits) != 1:
            how = "matches no option" if not hits else f"matches options {', '.join(hits)}"
            raise InputError(path, line, key, f"{show(value)} {how}; expected one of the letters {', '.join(options)} or one option's text")
        letters.append((key, hits[0]))
    for key, letter in letters[1:]:
        if letter != letters[0][1]:
            raise InputError(path, line, key, f"names option {letter} but field '{letters[0][0]}' names {letters[0][1]}")
    return letters[0][0], letters[0][1]


def _taxon(fields: dict[str, tuple[str, object]], canon: str, normalise, path: Path | str, line: int | None) -> str:
    key, value = fields.get(canon, (canon, None))
    text = text_field(value, path, line, key)
    try:
        return normalise(text)
    except ValueError as e:
        raise InputError(path, line, key, str(e)) from None


def _object(fields: dict[str, tuple[str, object]], canon: str, path: Path | str, line: int | None) -> dict[str, object]:
    key, value = fields.get(canon, (canon, None))
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(path, line, key, f"expected an object, got {show(value)}")
    return dict(value)


def release_row(obj: Mapping[str, object], path: Path | str = "<release>", line: int | None = None) -> ReleaseRow:
    """One release row (canonical names or aliases) -> ReleaseRow. `path`/`line` label errors."""
    fields, extra, answers = _resolve(obj, path, line)

    def get(canon: str) -> tuple[str, object]:
        return fields.get(canon, (canon, None))

    id_key, id_val = get("id")
    row_id = text_field(id_val, path, line, id_key, numbers=True)
    item_key, item_val = get("item_id")
    item_id = text_field(item_val, path, line, item_key, numbers=True) if item_val is not None else row_id
    src_key, src_val = get("source_dataset")
    source = text_field(src_val, path, line, src_key)
    subj_key, subj_val = get("subject")
    subject = None if subj_val is None or (isinstance(subj_val, str) and not subj_val.strip()) else text_field(subj_val, path, line, subj_key)
    q_key, q_val = get("question")
    question = text_field(q_val, path, line, q_key)

    opt_key, opt_val = get("options")
    if opt_val is None:
        raise InputError(path, line, opt_key, "is missing")
    raw_options = _letter_map(opt_val, path, line, opt_key, "options")
    options = {k: text_field(v, path, line, f"{opt_key}.{k}", numbers=True) for k, v in raw_options.items()}
    if "".join(options) != LETTERS[: len(options)] or len(options) < 2:
        raise InputError(path, line, opt_key, f"expected at least two options lettered A, B, ...; got {', '.join(options) or 'none'}")
    ans_key, answer = _answer(answers, options, path, line)

    content_type = _taxon(fields, "content_type", content_type_key, path, line)
    provenance = _taxon(fields, "provenance", provenance_key, path, line)

    meta = {**extra, **_object(fields, "meta", path, line)}
    bundle_meta = _object(fields, "bundle_meta", path, line)
    item = build_item(
        path,
        line,
        id=item_id,
        source=source,
        question=question,
        options=options,
        answer=answer,
        subject=subject,
        meta=meta,
        answer_field=ans_key,
    )

    ctx_key, ctx_val = get("option_contexts")
    if ctx_val is None:
        raise InputError(path, line, ctx_key, "is missing (one context sentence per option)")
    raw_ctx = _letter_map(ctx_val, path, line, ctx_key, "context sentences", n=len(options))
    contexts: dict[str, str] = {}
    for k, v in raw_ctx.items():
        if v is None:
            continue
        if not isinstance(v, str):
            raise InputError(path, line, ctx_key, f"the sentence for option {k} is not text: {show(v)}")
        contexts[k] = v.strip()
    try:
        check_bundle(item, contexts)
    except ValueError as e:
        raise InputError(path, line, ctx_key, str(e)) from None
    contexts = {k: contexts[k] for k in options}

    bid_key, bid_val = get("bundle_id")
    if bid_val is not None:
        bundle_id = text_field(bid_val, path, line, bid_key)
    elif item_id != row_id:
        bundle_id = row_id
    else:
        bundle_id = bundle_id_for(item_id, content_type, provenance)
    return ReleaseRow(line, row_id, item, bundle_id, content_type, provenance, contexts, bundle_meta)


def iter_release(path: Path | str) -> Iterator[ReleaseRow]:
    """Stream the rows of a release file. Row ids and bundle ids must be unique; rows that share an
    item (several bundles per item) must agree on the item."""
    row_ids, bundle_ids = IdChecker(path), IdChecker(path, field="bundle_id", what="bundle")
    seen_items: dict[str, tuple[str, int | None]] = {}
    for n, obj in json_lines(path):
        row = release_row(obj, path, n)
        id_key = next((k for k in RELEASE_ALIASES["id"] if k in obj), "id")
        row_ids.check(row.row_id, n, id_key)
        bundle_ids.check(row.bundle_id, n, "bundle_id" if "bundle_id" in obj else id_key)
        digest = stable_hash(row.item.model_dump(mode="json"))
        first = seen_items.setdefault(row.item.id, (digest, n))
        if first[0] != digest:
            raise InputError(
                path,
                n,
                "item_id" if "item_id" in obj else id_key,
                f"item {show(row.item.id)} differs from its row on line {first[1]} (rows of one item must repeat it exactly)",
            )
        yield row


def read_release_items(path: Path | str) -> Iterator[Item]:
    """Stream the distinct Items of a release file (bundles are checked, then dropped)."""
    seen: set[str] = set()
    for row in iter_release(path):
        if row.item.id not in seen:
            seen.add(row.item.id)
            yield row.item


def read_release(path: Path | str, seed: int = 0, name: str | None = None) -> Suite:
    """A Suite from a release file: its items, and for every row the probes of its bundle (one
    Type 1 probe per wrong option, one seeded as the sample, and one Type 2 probe)."""
    path = Path(path)
    items: dict[str, Item] = {}
    probes: list[Probe] = []
    rows = 0
    for row in iter_release(path):
        items.setdefault(row.item.id, row.item)
        probes.extend(row.probes(seed))
        rows += 1
    counts = {
        "items": len(items),
        "bundles": rows,
        "probes": len(probes),
        "type1": sum(p.condition == "type1" for p in probes),
        "type2": sum(p.condition == "type2" for p in probes),
    }
    manifest = SuiteManifest(
        name=name or path.stem,
        seed=seed,
        family="misleading",
        counts=counts,
        description=f"read from the MedMisBench-style release {path} ({rows} rows, {len(items)} items), seed {seed}",
        source={"format": FORMAT, "path": str(path), "sha256": sha256_file(path)},
    )
    return Suite(manifest, list(items.values()), probes)


# --------------------------------------------------------------------------- writing


def release_rows(suite: Suite) -> Iterator[dict[str, Any]]:
    """The release rows of a suite, one per bundle, in item order. Items without a bundle have no
    row. A bundle's probes must be exactly what its sentences give with the suite's seed (a row
    keeps only the bundle), otherwise InputError: the release could not give them back."""
    where = suite.path or f"<suite {suite.manifest.name}>"
    seed = suite.manifest.seed
    by_bundle: dict[str, list[Probe]] = {}
    for p in probes_of(suite):
        by_bundle.setdefault(p.bundle_id, []).append(p)
    per_item: dict[str, list[str]] = {}
    for bid, ps in by_bundle.items():
        owners = {p.item_id for p in ps}
        if len(owners) != 1:
            raise InputError(where, None, "item_id", f"bundle {show(bid)} has probes of several items: {', '.join(sorted(owners))}")
        owner = ps[0].item_id
        if owner not in suite.items:
            raise InputError(where, None, "item_id", f"probes of bundle {show(bid)} name item {show(owner)}, which the suite lacks")
        per_item.setdefault(owner, []).append(bid)
    for item in suite.items.values():
        bids = per_item.get(item.id, [])
        for bid in bids:
            ps = by_bundle[bid]
            kinds = {(p.content_type, p.provenance) for p in ps}
            if len(kinds) != 1:
                raise InputError(where, None, "content_type", f"bundle {show(bid)} mixes content types / provenances")
            ct, pv = kinds.pop()
            sentences = bundle_of(ps)
            meta = next((p.meta for p in ps if p.condition == "type2"), ps[0].meta)
            try:
                expected = probes_from_bundle(item, sentences, ct, pv, seed, bundle_id=bid, meta=meta)
            except ValueError as e:
                raise InputError(where, None, "option_contexts", f"bundle {show(bid)}: {e}") from None
            if sorted(expected, key=lambda p: p.id) != sorted(ps, key=lambda p: p.id):
                raise InputError(
                    where,
                    None,
                    "probes",
                    f"the probes of bundle {show(bid)} are not the ones its sentences give with seed {seed}; "
                    "a release row keeps only the bundle, so they could not be read back",
                )
            row_id = item.id if len(bids) == 1 else bid
            implied = row_id if row_id != item.id else bundle_id_for(item.id, ct, pv)
            row: dict[str, object] = {"id": row_id}
            if row_id != item.id:
                row["item_id"] = item.id
            row["source_dataset"] = item.source
            if item.subject is not None:
                row["subject"] = item.subject
            row.update(
                question=item.question,
                options=dict(item.choices),
                answer=item.answer,
                content_type=ct,
                provenance=pv,
                option_contexts=sentences,
            )
            if bid != implied:
                row["bundle_id"] = bid
            if item.meta:
                row["meta"] = item.meta
            if meta:
                row["bundle_meta"] = meta
            yield row


def write_release(suite: Suite, path: Path | str) -> int:
    """Write a suite as a release file (atomically: nothing is left on error); returns the number
    of rows. read_release(path, seed=suite.manifest.seed) gives back the same items and probes."""
    return write_jsonl(path, release_rows(suite))
