"""Suite directories (suite.json + items.jsonl + probes.jsonl): written atomically with
checksums, and read whole or, for a run over a large suite, checked once and read back from disk a
chunk of items at a time (`SuiteIndex`). A probe line is read as its family's probe: the suite
loader asks the family registry for the probe model by the line's `family`."""

from __future__ import annotations

import json
import os
import shutil
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from .records import GenericProbe, Item, Probe, SuiteManifest
from .runtime.errors import InputError
from .runtime.fileio import OutputError, atomic_write, iter_json_lines, iter_json_lines_at, json_line_at, parse_record, sha256_file, temp_dir, write_jsonl


def parse_item(obj: Mapping[str, object], path: Path, line: int | None) -> Item:
    """One item line of a suite's items.jsonl (read by `iter_json_lines`), validated."""
    return parse_record(Item, obj, path, line, sized=True)


def parse_probe(obj: dict[str, Any], path: Path, line: int | None, manifest: SuiteManifest) -> Probe:
    """One probe line of a suite's probes.jsonl (read by `iter_json_lines`), validated as its
    family's probe (the line's `family`, else the suite's)."""
    family = obj.get("family") or manifest.family
    from .family import probe_model

    try:
        model = probe_model(family) or GenericProbe
    except KeyError as e:
        raise InputError(path, line, "family", str(e).strip("'\"")) from None
    return parse_record(model, {**obj, "family": family}, path, line, sized=True)


def check_probe(p: Probe, item: Item | None, path: Path, line: int | None, items_path: Path) -> None:
    """InputError unless the probe's item exists and the probe fits it."""
    if item is None:
        raise InputError(path, line, "item_id", f"no item '{p.item_id}' in {items_path.name}")
    try:
        p.check_against(item)
    except ValueError as e:
        raise InputError(path, line, getattr(e, "field", None), str(e)) from None


def probes_path(d: Path, manifest: SuiteManifest) -> Path | None:
    """The suite directory's probes.jsonl, None when it has none (InputError when the manifest
    counts probes)."""
    ppath = d / "probes.jsonl"
    if ppath.exists():
        return ppath
    if manifest.counts.get("probes"):
        raise InputError(ppath, None, None, f"is missing (suite.json counts {manifest.counts['probes']} probes)")
    return None


class Suite:
    """A loaded suite: manifest, items by id (in file order) and probes (in file order).

    A lazily loaded suite holds no record until one is asked for: `items` and `probes` read them
    all into memory; `check()`, `item_ids()`, `batches()`, `iter_items()` and `iter_probes()` read
    them from disk as they go (checked once, then read again by offset: `SuiteIndex`), so that a
    run over a large suite holds one chunk of records at a time."""

    def __init__(self, manifest: SuiteManifest, items: Sequence[Item], probes: Sequence[Probe], path: Path | None = None):
        self.manifest = manifest
        self._items = {it.id: it for it in items}
        # a family's own probe list is held as given (a list of its probe type)
        self._probes: list[Probe] = probes if isinstance(probes, list) else list(probes)
        self._unread: Callable[[], tuple[list[Item], list[Probe]]] | None = None  # a lazy load's records, read on first use
        self._index: SuiteIndex | None = None  # a lazy load's index, once checked
        self.path = path

    def read(self) -> Suite:
        """Read a lazily loaded suite's records now (InputError on bad input); a no-op otherwise."""
        if self._unread is not None:
            items, probes = self._unread()
            self._unread, self._index = None, None
            self._items, self._probes = {it.id: it for it in items}, probes
        return self

    def check(self) -> Suite:
        """Check a lazily loaded suite's records now, streaming (InputError on bad input), keeping
        where each is rather than the records; a no-op when they are in memory."""
        if self._unread is not None and self._index is None:
            assert self.path is not None
            self._index = SuiteIndex.build(self.path, self.manifest)
        return self

    def _streamed(self) -> SuiteIndex | None:
        """The suite's index when its records are read from disk as needed (None: in memory)."""
        return self.check()._index if self._unread is not None else None

    def item_ids(self) -> list[str]:
        """Every item id, in file order."""
        index = self._streamed()
        return index.item_ids() if index is not None else list(self._items)

    def records_of(self, item_ids: Sequence[str]) -> int:
        """How many items and probes these items are."""
        index = self._streamed()
        if index is not None:
            return len(item_ids) + sum(index.probe_count(i) for i in item_ids)
        wanted = set(item_ids)
        return len(item_ids) + sum(p.item_id in wanted for p in self._probes)

    def batches(self, item_ids: Sequence[str], records: int) -> Iterator[Suite]:
        """The items of `item_ids`, in that order, with their probes (each item's in file order),
        as suites in memory of about `records` records (an item and its probes) each, at least
        one item each: read from disk a batch at a time when the suite is read lazily."""
        count: Callable[[str], int]
        read: Callable[[Sequence[str]], tuple[list[Item], list[Probe]]]
        index = self._streamed()
        if index is not None:
            count, read = index.probe_count, index.records
        else:
            by_item: dict[str, list[Probe]] = {}
            for p in self._probes:
                by_item.setdefault(p.item_id, []).append(p)

            def count_held(item_id: str) -> int:
                return len(by_item.get(item_id, ()))

            def read_held(ids: Sequence[str]) -> tuple[list[Item], list[Probe]]:
                return [self._items[i] for i in ids], [p for i in ids for p in by_item.get(i, ())]

            count, read = count_held, read_held

        batch: list[str] = []
        size = 0
        for item_id in item_ids:
            batch.append(item_id)
            size += 1 + count(item_id)
            if size >= records:
                yield Suite(self.manifest, *read(batch), self.path)
                batch, size = [], 0
        if batch:
            yield Suite(self.manifest, *read(batch), self.path)

    def iter_items(self) -> Iterator[Item]:
        """Every item in file order; read from disk as it goes when the suite is read lazily."""
        index = self._streamed()
        return index.items() if index is not None else iter(self._items.values())

    def iter_probes(self) -> Iterator[Probe]:
        """Every probe in file order; read from disk as it goes when the suite is read lazily."""
        index = self._streamed()
        return index.probes() if index is not None else iter(self._probes)

    @property
    def items(self) -> dict[str, Item]:
        self.read()
        return self._items

    @items.setter
    def items(self, value: dict[str, Item]) -> None:
        self.read()
        self._items = value

    @property
    def probes(self) -> list[Probe]:
        self.read()
        return self._probes

    @probes.setter
    def probes(self, value: list[Probe]) -> None:
        self.read()
        self._probes = value

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def load(cls, directory: Path | str, verify: bool = True, lazy: bool = False) -> Suite:
        """The suite in `directory`: its manifest read and its files checked against the manifest's
        checksums now; its items and probes read and checked now, or with `lazy` on first use (a
        rerun that needs no record, such as a settled evaluation, never reads them). Bad input is
        an InputError naming the file, line and field either way."""
        d = Path(directory)
        mpath = d / "suite.json"
        if not mpath.exists():
            raise InputError(mpath, None, None, "not a suite directory (suite.json missing)")
        try:
            raw = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise InputError(mpath, e.lineno, None, f"not valid JSON ({e.msg})") from None
        manifest = parse_record(SuiteManifest, raw, mpath, None)
        if verify:
            for fname, digest in manifest.checksums.items():
                f = d / fname
                if not f.is_file():
                    raise InputError(f, None, None, "is missing (suite.json lists it with a checksum)")
                if sha256_file(f) != digest:
                    raise InputError(f, None, None, "checksum does not match suite.json (file changed after the suite was written)")
        if lazy:
            suite = cls(manifest, [], [], d)
            suite._unread = lambda: cls._records(d, manifest)
            return suite
        items, probes = cls._records(d, manifest)
        return cls(manifest, items, probes, d)

    @staticmethod
    def _records(d: Path, manifest: SuiteManifest) -> tuple[list[Item], list[Probe]]:
        """The items and probes of the suite directory `d`, read and checked (InputError otherwise)."""
        items: list[Item] = []
        seen: set[str] = set()
        ipath = d / "items.jsonl"
        for n, obj in iter_json_lines(ipath):
            it = parse_item(obj, ipath, n)
            if it.id in seen:
                raise InputError(ipath, n, "id", f"duplicate item id '{it.id}'")
            seen.add(it.id)
            items.append(it)
        by_id = {it.id: it for it in items}
        probes: list[Probe] = []
        ppath = probes_path(d, manifest)
        pseen: set[str] = set()
        if ppath is not None:
            for n, obj in iter_json_lines(ppath):
                p = parse_probe(obj, ppath, n, manifest)
                if p.id in pseen:
                    raise InputError(ppath, n, "id", f"duplicate probe id '{p.id}'")
                pseen.add(p.id)
                check_probe(p, by_id.get(p.item_id), ppath, n, ipath)
                probes.append(p)
        return items, probes

    def save(self, directory: Path | str) -> Path:
        """Write the suite atomically: files go to a temporary directory renamed into place."""
        d = Path(directory)
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            tmp = temp_dir(d.parent, f".{d.name}.")
        except OSError as e:
            raise OutputError(d, e) from None
        try:
            write_jsonl(tmp / "items.jsonl", self.items.values())
            write_jsonl(tmp / "probes.jsonl", self.probes)
            counts = dict(self.manifest.counts)
            counts.update(items=len(self.items), probes=len(self.probes))
            counts.update(Counter(p.condition for p in self.probes))
            checksums = {f: sha256_file(tmp / f) for f in ("items.jsonl", "probes.jsonl")}
            manifest = self.manifest.model_copy(update={"counts": counts, "checksums": checksums})
            with atomic_write(tmp / "suite.json") as fh:
                fh.write(manifest.model_dump_json(indent=2) + "\n")
            if d.exists():
                old = d.with_name(f".{d.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                os.replace(d, old)
                os.replace(tmp, d)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, d)
            self.manifest = manifest
            self.path = d
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return d

    def probes_for(self, item_id: str) -> list[Probe]:
        return [p for p in self.probes if p.item_id == item_id]


def _grouped(owner: array, n_items: int, at: array, line: array) -> tuple[array, array, array]:
    """The probes' offsets and lines grouped by their item (file order within an item), and where
    each item's probes start: a counting sort, one pass over the probes (parsing them costs far more)."""
    start = array("q", bytes(8 * (n_items + 1)))
    for o in owner:
        start[o + 1] += 1
    for i in range(n_items):
        start[i + 1] += start[i]
    nxt = start[:-1]
    g_at, g_line = array("q", bytes(8 * len(owner))), array("q", bytes(8 * len(owner)))
    for j, o in enumerate(owner):
        k = nxt[o]
        nxt[o] = k + 1
        g_at[k], g_line[k] = at[j], line[j]
    return start, g_at, g_line


class SuiteIndex:
    """A suite directory's records checked once, streaming, and then read again by byte offset:
    what a run over a large suite holds instead of the records themselves.

    `build` reads items.jsonl and probes.jsonl line by line with every check of `Suite.load`
    (line-exact errors, duplicate ids, each probe against its item) and keeps, per item, its id
    and the offset of its line, and per probe the offset and number of its line, grouped by item
    in file order (packed arrays: 16 bytes a record besides the item ids). `records(ids)`
    reads the items of some ids and their probes back from disk, so a run holds one chunk of
    records at a time; `items()` and `probes()` stream them in file order."""

    def __init__(
        self, directory: Path, manifest: SuiteManifest, ids: dict[str, int], item_at: array, item_line: array, probe_at: array, probe_line: array, start: array
    ):  # packed arrays
        self.directory, self.manifest = directory, manifest
        self.items_path, self.probes_path = directory / "items.jsonl", probes_path(directory, manifest)
        self._ids = ids  # item id -> position in items.jsonl
        self._item_at, self._item_line = item_at, item_line
        self._probe_at, self._probe_line, self._start = probe_at, probe_line, start  # probes of item i: [start[i], start[i+1])

    @classmethod
    def build(cls, directory: Path | str, manifest: SuiteManifest) -> SuiteIndex:
        """Check every record of the suite directory, streaming (InputError naming file, line and
        field on the first bad one), and keep where each is."""
        d = Path(directory)
        ipath = d / "items.jsonl"
        ids: dict[str, int] = {}
        item_at, item_line = array("q"), array("q")  # packed as they grow: 8 bytes a record, not a Python int
        for n, at, obj in iter_json_lines_at(ipath):
            it = parse_item(obj, ipath, n)
            if it.id in ids:
                raise InputError(ipath, n, "id", f"duplicate item id '{it.id}'")
            ids[it.id] = len(item_at)
            item_at.append(at)
            item_line.append(n)
        owner, probe_at, probe_line = array("q"), array("q"), array("q")
        ppath = probes_path(d, manifest)
        if ppath is not None:
            seen: set[str] = set()
            last: tuple[int, Item | None] = (-1, None)  # probes usually follow their item: read it once
            with open(ipath, "rb") as ifh:
                for n, at, obj in iter_json_lines_at(ppath):
                    p = parse_probe(obj, ppath, n, manifest)
                    if p.id in seen:
                        raise InputError(ppath, n, "id", f"duplicate probe id '{p.id}'")
                    seen.add(p.id)
                    i = ids.get(p.item_id, -1)
                    if i >= 0 and last[0] != i:
                        last = (i, parse_item(json_line_at(ifh, ipath, item_at[i], item_line[i]), ipath, item_line[i]))
                    check_probe(p, last[1] if i >= 0 else None, ppath, n, ipath)
                    owner.append(i)
                    probe_at.append(at)
                    probe_line.append(n)
            del seen
        start, probe_at, probe_line = _grouped(owner, len(ids), probe_at, probe_line)
        return cls(d, manifest, ids, item_at, item_line, probe_at, probe_line, start)

    def item_ids(self) -> list[str]:
        """Every item id, in file order."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def n_probes(self) -> int:
        return len(self._probe_at)

    def probe_count(self, item_id: str) -> int:
        i = self._ids[item_id]
        return int(self._start[i + 1] - self._start[i])

    def records(self, item_ids: Sequence[str]) -> tuple[list[Item], list[Probe]]:
        """The items of `item_ids` (in that order) and their probes (item by item, each item's in
        file order), read again from disk."""
        items: list[Item] = []
        probes: list[Probe] = []
        ipath, ppath = self.items_path, self.probes_path
        with open(ipath, "rb") as ifh, open(ppath, "rb") if ppath is not None else nullcontext() as pfh:
            for item_id in item_ids:
                i = self._ids[item_id]
                line = int(self._item_line[i])
                items.append(parse_item(json_line_at(ifh, ipath, int(self._item_at[i]), line), ipath, line))
                for j in range(int(self._start[i]), int(self._start[i + 1])):
                    line = int(self._probe_line[j])
                    assert ppath is not None and pfh is not None
                    probes.append(parse_probe(json_line_at(pfh, ppath, int(self._probe_at[j]), line), ppath, line, self.manifest))
        return items, probes

    def items(self) -> Iterator[Item]:
        """Every item, in file order, read again from disk."""
        for n, obj in iter_json_lines(self.items_path):
            yield parse_item(obj, self.items_path, n)

    def probes(self) -> Iterator[Probe]:
        """Every probe, in file order, read again from disk."""
        if self.probes_path is None:
            return
        for n, obj in iter_json_lines(self.probes_path):
            yield parse_probe(obj, self.probes_path, n, self.manifest)
