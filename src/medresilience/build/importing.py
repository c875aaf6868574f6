"""`medres import`: a source file, a family's release file, a known inventory or a hub name
(`hf:OWNER/NAME[:CONFIG][@REVISION]`) into an items file or a suite directory.

- A release layout (a format some family reads into a suite: told by the families' detectors, or
  named with `fmt`) becomes a suite; anything else an items file through `sources.load_items`.
- A hub name is downloaded first (`sources.hub.fetch`, which selects the config's files) and then
  read the same way: several files of a release together (a folder of them, e.g. every
  MedMisBench config), several item files one after the other into one items file. Where the data
  came from goes with it: the suite manifest's `source` (and so every run's run.json) and, for an
  items file, `<out>.source.json` beside it, hold the dataset, the requested revision, the commit it
  resolved to, the endpoint and every file's SHA-256.
- A file the catalog knows by name (one not on the hub, such as the Vanderbilt inventories) has
  its checksum compared with the one the project tested; a difference is a warning, not an error
  (the file may have been revised upstream). An abbreviation inventory is copied into the `out`
  folder, which `medres build noise --abbreviations` reads."""

from __future__ import annotations

import inspect
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from ..records import Item
from ..runtime.errors import ConfigError, InputError, MedresError
from ..runtime.fileio import atomic_write, sha256_file, write_jsonl
from ..runtime.jsontypes import JSONObject
from ..suite import Suite

__all__ = ["Imported", "import_data", "provenance_path"]


@dataclass
class Imported:
    out: Path
    kind: str  # "suite", "items" or "file"
    summary: str
    warnings: list[str] = field(default_factory=list)
    provenance: JSONObject | None = None


def provenance_path(items_file: Path | str) -> Path:
    """Where an items file imported by hub name keeps its provenance."""
    p = Path(items_file)
    return p.with_name(p.name + ".source.json")


def _suite_formats() -> dict[str, Callable[..., Suite]]:
    from ..family import families

    return {name: reader for fam in families() for name, reader in fam.suites.readers.items()}


def _detect_release(path: Path) -> str | None:
    from ..family import families

    return next((d for fam in families() if fam.suites.detect and (d := fam.suites.detect(path))), None)


def _read_suite(reader: Callable[..., Suite], name: str, path: Path, seed: int, config: str | None, myths: Path | None) -> Suite:
    extra: dict[str, object] = {k: v for k, v in (("config", config), ("myths", myths)) if v}
    if myths:
        params = inspect.signature(reader).parameters.values()
        if not any(p.name == "myths" or p.kind is p.VAR_KEYWORD for p in params):
            raise ConfigError("--myths", f"format {name} reads no myth file")
    suite = reader(path, seed=seed, **extra)
    if not suite.items:  # as an items import: an empty source is refused, never an empty suite
        raise InputError(path, None, None, "no item found; nothing written")
    return suite


def _checksum_warning(path: Path) -> str | None:
    from ..sources.catalog import known_file

    known = known_file(path)
    if known is None or not path.is_file():
        return None
    dataset, expected = known
    if not expected:
        return None
    got = sha256_file(path)
    if got == expected:
        return None
    return (
        f"{path}: SHA-256 {got} differs from the {dataset.name} file this project tested ({expected}); it may have been "
        f"revised upstream ({dataset.where}), so results may differ from ours"
    )


def _copy_inventory(path: Path, out: Path) -> Imported:
    from ..sources.catalog import known_file

    if not path.is_file():
        raise InputError(path, None, None, "file not found")
    out.mkdir(parents=True, exist_ok=True)
    target = out / path.name
    with atomic_write(target, "wb") as fh, open(path, "rb") as src:
        shutil.copyfileobj(src, fh)
    known = known_file(path)
    what = known[0].name if known else "inventory"
    return Imported(out, "file", f"{target}: {what} ({sha256_file(target)[:12]}...)")


def _write_items(out: Path, files: list[Path], fmt: str, labels: list[str] | None = None) -> tuple[int, Counter]:
    """Every file's items into one items file; an id met in two files is an error naming both."""
    from .. import sources

    skips: Counter = Counter()
    seen: dict[str, str] = {}

    def stream() -> Iterator[Item]:
        for i, f in enumerate(files):
            label = labels[i] if labels else str(f)
            for item in sources.load_items(f, fmt=fmt, skips=skips):
                if item.id in seen and len(files) > 1:
                    raise InputError(label, None, "id", f"id {item.id!r} is also in {seen[item.id]}; name one config or split")
                seen[item.id] = label
                yield item

    records = stream()
    first = next(records, None)  # an import that finds nothing is an error, and writes nothing
    if first is None:
        why = ", ".join(f"{k}: {v}" for k, v in skips.items())
        what = "diagnosis case" if fmt == "diagnosis" else "item"
        raise InputError(
            labels[0] if labels and len(files) == 1 else files[0] if len(files) == 1 else "the import",
            None,
            None,
            f"no {what} found" + (f" (skipped {why})" if why else "") + "; nothing written",
        )
    return write_jsonl(out, chain([first], records)), skips


def _counted(n: int, noun: str) -> str:
    """'1 item', '3 items': a count with its noun in the number it takes."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _skipped(skips: Counter) -> str:
    return ("; skipped " + ", ".join(f"{k}: {v}" for k, v in skips.items())) if skips else ""


def import_data(source: str | Path, out: Path | str, fmt: str = "auto", seed: int = 0, config: str | None = None, myths: Path | None = None) -> Imported:
    """Import `source` (a path or an hf: name) into `out`; see the module docstring."""
    from ..sources.hub import is_hub_ref

    out = Path(out)
    if is_hub_ref(source):
        return _import_hub(str(source), out, fmt, seed, config, myths)
    path = Path(source)
    from ..sources.catalog import known_file

    known = known_file(path)
    if known is not None and not path.exists():
        raise InputError(path, None, None, f"file not found; it is part of {known[0].name}: get it from {known[0].where} (medres datasets)")
    warnings = [w] if (w := _checksum_warning(path)) else []
    if fmt == "abbreviations" or (fmt == "auto" and known and known[0].fmt == "abbreviations"):
        done = _copy_inventory(path, out)
        done.warnings = warnings
        return done
    suite_formats = _suite_formats()
    name = fmt
    if fmt == "auto":
        name = _detect_release(path) or "auto"
    if name in suite_formats:
        suite = _read_suite(suite_formats[name], name, path, seed, config, myths)
        suite.save(out)
        return Imported(out, "suite", f"suite {out}: {_counted(len(suite.items), 'item')}, {_counted(len(suite.probes), 'probe')}", warnings)
    n, skips = _write_items(out, [path], name)
    provenance_path(out).unlink(missing_ok=True)  # an earlier import's record of a hub revision no longer holds
    return Imported(out, "items", f"{out}: {_counted(n, 'item')}" + _skipped(skips), warnings)


def _import_hub(text: str, out: Path, fmt: str, seed: int, config: str | None, myths: Path | None) -> Imported:
    from ..sources.hub import fetch, parse_ref

    ref = parse_ref(text)
    dl = fetch(ref)
    prov = dl.provenance
    where = f"{ref} at {dl.commit[:12]}"
    suite_formats = _suite_formats()
    paths = dl.paths
    with tempfile.TemporaryDirectory(prefix="medres-hub-") as tmp:
        # several release files are read as one folder holding just them (links into the cache)
        view = Path(tmp) / ref.repo_id.replace("/", "--")
        for f in dl.files:
            link = view / f
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(dl.root / f)
        target = paths[0] if len(paths) == 1 else view  # errors then name the file in the cache
        name = fmt
        if fmt == "auto":
            name = _detect_release(target) or (_detect_release(paths[0]) if len(paths) > 1 else None) or "auto"
        if name in suite_formats:
            try:
                suite = _read_suite(suite_formats[name], name, target, seed, config, myths)
            except MedresError as e:
                if len(dl.files) > 1:
                    raise MedresError(
                        f"{ref}: {len(dl.files)} data files ({', '.join(dl.files)}) and format {name} reads them "
                        f"one at a time: name one, e.g. {ref.__class__(ref.repo_id, dl.files[0], ref.revision)} "
                        f"({e})"
                    ) from None
                raise
            # `source` is one of the manifest's undeclared fields (extra="allow"), held in model_extra
            extra = suite.manifest.model_extra
            assert extra is not None
            before = dict(extra.get("source") or {})
            before.pop("path", None)
            before.pop("files", None)
            before.pop("sha256", None)
            extra["source"] = {**before, "format": name, **prov}
            suite.manifest.name = ref.repo_id.split("/")[-1] + (f"-{ref.config.replace('/', '-')}" if ref.config else "")
            suite.manifest.description = f"imported from {where} (format {name}), seed {seed}"
            suite.save(out)
            return Imported(
                out, "suite", f"suite {out}: {_counted(len(suite.items), 'item')}, {_counted(len(suite.probes), 'probe')} from {where}", provenance=prov
            )
        labels = [f"{ref.repo_id}/{f}" for f in dl.files]
        n, skips = _write_items(out, paths, name, labels)
    with atomic_write(provenance_path(out)) as fh:
        json.dump({"format": name, **prov, "items": n}, fh, indent=2)
    return Imported(
        out, "items", f"{out}: {_counted(n, 'item')} from {where}" + _skipped(skips) + f" (provenance: {provenance_path(out).name})", provenance=prov
    )
