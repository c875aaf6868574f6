"""A suite directory's records checked once, streaming, and then read again by byte offset: what a
run over a large suite holds instead of the records themselves.

`SuiteIndex.build` reads items.jsonl and probes.jsonl line by line with every check of
`Suite.load` (line-exact errors, duplicate ids, each probe against its item) and keeps, per item,
its id and the offset of its line, and per probe the offset and number of its line, grouped by
item in file order (numpy arrays: about 20 bytes a record besides the item ids). `records(ids)`
reads the items of some ids and their probes back from disk, so a run holds one chunk of records
at a time; `items()` and `probes()` stream them in file order."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from .errors import InputError
from .records import (
    Item,
    Probe,
    SuiteManifest,
    check_probe,
    iter_json_lines,
    iter_json_lines_at,
    json_line_at,
    parse_item,
    parse_probe,
    probes_path,
)


class SuiteIndex:
    """Where each record of a checked suite directory is (see the module doc)."""

    def __init__(self, directory: Path, manifest: SuiteManifest, ids: dict[str, int], item_at: np.ndarray, item_line: np.ndarray,
                 probe_at: np.ndarray, probe_line: np.ndarray, start: np.ndarray):
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
        own = np.frombuffer(owner, dtype=np.int64)
        order = np.argsort(own, kind="stable")  # grouped by item, file order within an item
        start = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(own, minlength=len(ids)), out=start[1:])
        return cls(d, manifest, ids, np.frombuffer(item_at, dtype=np.int64), np.frombuffer(item_line, dtype=np.int64).astype(np.int32),
                   np.frombuffer(probe_at, dtype=np.int64)[order], np.frombuffer(probe_line, dtype=np.int64)[order].astype(np.int32), start)

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
        with open(ipath, "rb") as ifh, (open(ppath, "rb") if ppath is not None else nullcontext()) as pfh:
            for item_id in item_ids:
                i = self._ids[item_id]
                line = int(self._item_line[i])
                items.append(parse_item(json_line_at(ifh, ipath, int(self._item_at[i]), line), ipath, line))
                for j in range(int(self._start[i]), int(self._start[i + 1])):
                    line = int(self._probe_line[j])
                    assert ppath is not None
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
