"""The abbreviations variant: word senses in a case replaced by the abbreviations clinicians write
for them, from abbreviation inventories such as Vanderbilt's clinic-note and discharge-summary
inventories (TSV with a header: abbreviation, sense, variation, CUI, frequency).

- For each sense the inventory's most frequent abbreviation is chosen: the row with the highest
  `frequency` (the share of the abbreviation's uses that mean this sense), then the most observed
  written forms; its written form is the most frequent `variation` ("BP_17|B.P_1|bp_2" -> "BP",
  an edge period dropped: "meds." -> "meds"). A row whose abbreviation stands for its sense less
  often than `min_frequency` is not used (by default half the time: "i" for "in" at 1.75% is not a
  fair stand-in), nor one no shorter than its sense. That is the study's plain string match on
  the inventory pairs (rules `study`); the default rules (`clinical`) also leave out number words,
  lab-report column codes and a sense that is the abbreviation's rare reading in another
  inventory (see `choose`).
- Substitution is whole-word (a sense is never replaced inside a longer word), case-insensitive,
  longest sense first (at each position the longest matching sense wins, so "blood pressure"
  becomes "BP" rather than "bld pressure"), and case-aware: an all-lower-case abbreviation takes
  the case of the word it replaces ("Patient" -> "Pt", "PATIENT" -> "PT"); one written with capitals
  stays as written ("blood pressure" -> "BP").
- Every replacement is recorded (offset in the original, the original words, the abbreviation),
  so the abbreviated text is rebuilt from the original, and counted per (sense, abbreviation)."""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ....runtime.errors import ConfigError, InputError
from ....runtime.fileio import csv_records

COLUMNS = ("abbreviation", "sense", "variation", "CUI", "frequency")
MIN_FREQUENCY = 0.5
INVENTORY_SUFFIXES = (".txt", ".tsv")


@dataclass(frozen=True)
class Abbreviation:
    """The abbreviation chosen for one sense."""

    sense: str
    form: str  # as written in the substituted text
    key: str  # the inventory's abbreviation column
    frequency: float
    observed: int  # how many written forms the inventory counted for this row
    inventory: str


@dataclass(frozen=True)
class Replacement:
    at: int
    original: str
    abbreviation: str
    sense: str

    def as_dict(self) -> dict[str, int | str]:
        return {"at": self.at, "original": self.original, "abbreviation": self.abbreviation}


def _forms(variation: str) -> Counter[str]:
    """Written forms and their counts from a variation field ("BP_17|B.P_1|bp_2")."""
    out: Counter[str] = Counter()
    for part in (variation or "").split("|"):
        part = part.strip()
        if not part:
            continue
        form, _, count = part.rpartition("_")
        if not form or not count.isdigit():
            form, count = part, "1"
        form = form.strip().strip(".").strip()
        if form:
            out[form] += int(count)
    return out


def inventory_files(paths: Iterable[Path | str]) -> list[Path]:
    """The inventory files named (a directory stands for its .txt / .tsv files with the header)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.iterdir()):
                if f.suffix.lower() in INVENTORY_SUFFIXES and f.is_file() and _has_header(f):
                    files.append(f)
        elif p.exists():
            files.append(p)
        else:
            raise InputError(p, None, None, "abbreviation inventory not found")
    if not files:
        raise InputError(
            ", ".join(str(p) for p in paths) or "(none)",
            None,
            None,
            "no abbreviation inventory (TSV with the header abbreviation, sense, variation, CUI, frequency)",
        )
    return files


def _has_header(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as fh:
            head = fh.readline().rstrip("\r\n").split("\t")
    except (OSError, UnicodeDecodeError):
        return False
    return head[:2] == ["abbreviation", "sense"]


class InventoryRow(TypedDict):
    """One sense of an abbreviation inventory: its written forms (`variation`) and frequency."""

    abbreviation: str
    sense: str
    variation: str
    frequency: float
    inventory: str


def read_inventory(path: Path | str) -> list[InventoryRow]:
    """The rows of one inventory file; a bad row is an InputError naming its line and field."""
    path = Path(path)
    rows: list[InventoryRow] = []
    records = csv_records(path, "\t", quoting=csv.QUOTE_NONE)
    header = next(records, None)
    if header is None or [h.strip() for h in header[1][:5]] != list(COLUMNS):
        raise InputError(path, 1, None, f"expected the header {', '.join(COLUMNS)} (tab-separated)")
    for n, row in records:
        if len(row) < 5:
            raise InputError(path, n, None, f"expected 5 tab-separated fields, got {len(row)}")
        try:
            freq = float(row[4])
        except ValueError:
            raise InputError(path, n, "frequency", f"not a number: {row[4]!r}") from None
        rows.append({"abbreviation": row[0].strip(), "sense": " ".join(row[1].split()), "variation": row[2].strip(), "frequency": freq, "inventory": path.name})
    return rows


#: number words: a number in a case is clinical content, and "two" -> "II" (read as "type II",
#: "grade II") is not how a clinician shortens it
NUMBER_WORDS = frozenset(
    {
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
        "once",
        "twice",
        "thrice",
        "single",
        "double",
        "triple",
        "half",
    }
)
_CAPITALISED_WORD = re.compile(r"[A-Z][a-z]+")


def column_code(form: str, sense: str) -> bool:
    """Whether a written form is a lab-report or flowsheet column code rather than what a clinician
    writes in a note: a sign that changes or adds meaning ("BS+" for "bowel sounds", "Plt-Ct"), two
    run-together capitalised words ("RespRt"), a lower-case prefix before capitals ("rcSpO2"), or a
    one-word sense cut to five or more capitals ("LYMPRE", "MONORE")."""
    if re.search(r"[^A-Za-z0-9/&.']", form):
        return True
    if len(_CAPITALISED_WORD.findall(form)) >= 2:
        return True
    if form[:1].islower() and any(c.isupper() for c in form):
        return True
    letters = [c for c in form if c.isalpha()]
    return " " not in sense and len(letters) >= 5 and all(c.isupper() for c in letters)


def _readings(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """(inventory, abbreviation) -> {sense: frequency} (the share of the abbreviation's uses in that
    inventory that mean the sense)."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        key = (str(r.get("inventory", "")), str(r["abbreviation"]).lower())
        sense = " ".join(str(r["sense"]).lower().split())
        out.setdefault(key, {})[sense] = max(float(r["frequency"]), out.get(key, {}).get(sense, 0.0))
    return out


#: the ways an abbreviation table is chosen from the inventories, by name
RULES = ("clinical", "study")


def choose(rows: Iterable[Mapping[str, Any]], min_frequency: float = MIN_FREQUENCY, rules: str = "clinical") -> dict[str, Abbreviation]:
    """sense (lower case) -> its most frequent abbreviation (see the module docstring).

    rules `study`: the study's plain string match on the inventory pairs (each sense's most
    frequent abbreviation that stands for it at least `min_frequency` of the time in its
    inventory). `clinical` (the default) also leaves out what a clinician would not write that
    way: number words, contractions cut at the apostrophe ("has not" -> "hasn"), lab-report column codes (`column_code`; of equally frequent written forms
    the lower-case one is taken, as "extr" over "EXTR"), and a sense that is the abbreviation's
    rare reading in another inventory that lists it (below `min_frequency` there: "woman" ->
    "WM", which the discharge summaries read as "white male"; "cardiac" -> "Cor")."""
    if rules not in RULES:
        raise ConfigError("--abbreviation-rules", f"'{rules}' is not allowed (allowed: {', '.join(RULES)})")
    rows = list(rows)
    clinical = rules == "clinical"
    readings = _readings(rows) if clinical else {}
    best: dict[str, tuple[tuple[float, int, str], Abbreviation]] = {}
    for r in rows:
        sense = str(r["sense"]).strip()
        if not sense or float(r["frequency"]) < min_frequency:
            continue
        low = " ".join(sense.lower().split())
        if clinical:
            if low in NUMBER_WORDS or low.endswith(" not"):  # "has not" -> "hasn": a contraction cut at its apostrophe
                continue
            key = str(r["abbreviation"]).lower()
            if any(ab == key and senses.get(low, 0.0) < min_frequency for (_, ab), senses in readings.items()):
                continue
        forms = _forms(str(r.get("variation") or ""))
        if forms:
            # of equally frequent forms the lower-case one under the clinical rules (capitals are
            # the lab report's), else the first in sort order
            form = min(forms, key=lambda f: (-forms[f], not f.islower(), f) if clinical else (-forms[f], f))
        else:
            form = str(r["abbreviation"]).replace("_", "/").strip("/") or str(r["abbreviation"])
        if not form or len(form) >= len(sense) or form.lower() == sense.lower():
            continue
        if clinical and column_code(form, sense):
            continue
        observed = sum(forms.values())
        cand = Abbreviation(sense, form, str(r["abbreviation"]), float(r["frequency"]), observed, str(r.get("inventory", "")))
        rank = (float(r["frequency"]), observed, "")
        key = sense.lower()
        if key not in best or rank > best[key][0] or (rank == best[key][0] and form < best[key][1].form):
            best[key] = (rank, cand)
    return {k: v for k, (_, v) in sorted(best.items())}


def load_table(paths: Sequence[Path | str], min_frequency: float = MIN_FREQUENCY, rules: str = "clinical") -> dict[str, Abbreviation]:
    rows: list[InventoryRow] = []
    for f in inventory_files(paths):
        rows += read_inventory(f)
    return choose(rows, min_frequency, rules)


def cased(original: str, form: str) -> str:
    """The abbreviation in the case of the words it replaces (see the module docstring)."""
    if any(c.isupper() for c in form):
        return form
    letters = [c for c in original if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return form.upper()
    if original[:1].isupper():
        return form[:1].upper() + form[1:]
    return form


def _trie_pattern(senses: Iterable[str]) -> str:
    """One regular expression matching any of the senses (lower case, words joined by single
    spaces; a space matches any run of whitespace), the longest first.

    The senses are laid out as a trie (a node: its children, tried first, then the end of a sense
    if one ends there), so the engine reads each character once instead of trying thousands of
    alternatives at every position. A node's children start with different characters (a space
    becomes `\\s+`, and no sense holds two spaces in a row), so at most one child can go on at a
    position: the match is the longest sense that matches there, as a longest-first alternation
    (`(?:sense1|sense2|...)`, sorted by length) finds it, only faster."""
    root: dict[str, Any] = {}
    end = ""  # the key that marks the end of a sense (no character is the empty string)
    for s in senses:
        node = root
        for ch in s:
            node = node.setdefault(ch, {})
        node[end] = True

    def walk(node: dict[str, Any]) -> str:
        branches = [(r"\s+" if ch == " " else re.escape(ch)) + walk(child) for ch, child in sorted(node.items()) if ch != end]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if end in node else body

    return walk(root)


class Abbreviator:
    """Whole-word, longest-first, case-aware substitution of a table's senses."""

    def __init__(self, table: Mapping[str, Abbreviation]):
        self.table = dict(table)
        self._rx = None
        if self.table:
            self._rx = re.compile(rf"(?<!\w)(?:{_trie_pattern(self.table)})(?!\w)", re.IGNORECASE)

    def __len__(self) -> int:
        return len(self.table)

    def substitute(self, text: str) -> tuple[str, list[Replacement]]:
        """The text with every sense replaced, and the replacements made (in text order)."""
        if self._rx is None:
            return text, []
        out: list[str] = []
        reps: list[Replacement] = []
        prev = 0
        for m in self._rx.finditer(text):
            original = m.group(0)
            ab = self.table[" ".join(original.lower().split())]
            form = cased(original, ab.form)
            out += [text[prev : m.start()], form]
            reps.append(Replacement(m.start(), original, form, ab.sense))
            prev = m.end()
        out.append(text[prev:])
        return "".join(out), reps


def apply(text: str, replacements: Iterable[Mapping[str, Any]]) -> str:
    """Rebuild an abbreviated text from the original and its recorded replacements."""
    out: list[str] = []
    prev = 0
    for r in sorted(replacements, key=lambda r: r["at"]):
        at, original = int(r["at"]), str(r["original"])
        if text[at : at + len(original)] != original:
            raise ValueError(f"replacement at {at} does not match the original text ({original!r})")
        out += [text[prev:at], str(r["abbreviation"])]
        prev = at + len(original)
    out.append(text[prev:])
    return "".join(out)


def frequency_table(counts: Counter[tuple[str, str]]) -> dict[str, int]:
    """{"sense -> abbreviation": count}, most frequent first."""
    return {f"{s} -> {a}": n for (s, a), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}
