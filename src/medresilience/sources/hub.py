"""Datasets by hub name: `hf:OWNER/NAME[:CONFIG][@REVISION]`, downloaded through huggingface_hub,
so its cache, HF_TOKEN, HF_ENDPOINT, HF_HOME / HF_HUB_CACHE and HF_HUB_OFFLINE work as they do for
every other tool that uses it (read when a download starts, not when the library was imported).

    dl = fetch(parse_ref("hf:AI4HealthResearch/MedMisBench:MEDMISQA@main"))
    dl.paths       # the selected data files, in the local cache
    dl.provenance  # dataset, requested revision, resolved commit, endpoint, {repo path: sha256}

Which files: the dataset card (README.md) declares configs with their data files (`configs:` in
its YAML header, as the `datasets` library reads it). CONFIG names one (CONFIG/SPLIT one split of
it); without CONFIG every config's files are taken. A card without configs: CONFIG picks the data
files (.jsonl, .json, .parquet, .csv) whose path holds each of its "/"-separated words as a word
("test" picks phrases_no_exclude_test.jsonl; "anatomy/test" picks anatomy/test-0000.parquet);
without CONFIG every data file.

The card is fetched first (it fixes the commit a branch or tag resolves to), then the listing of
that commit, then the selected files, all pinned to the commit. Offline (HF_HUB_OFFLINE=1) the
files come from the cache or not at all. Every failure is one HubError line saying what to do: a
gated dataset (accept its terms, set HF_TOKEN), an unknown name or revision, no network and no
cached copy.

Every file taken is checked against the id the hub's listing gives it before it is read: the git
blob id (SHA-1 of "blob <size>\\0" + bytes) of a regular file, the SHA-256 of an LFS file; offline,
against the id the cache files its blob under. A file whose bytes do not match (a mirror or cache
serving other content under the same id) is a HubError naming it, and its copy is removed from
the cache so a rerun downloads it again."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.errors import ConfigError, MedresError
from ..runtime.jsontypes import JSONObject

__all__ = ["DATA_SUFFIXES", "Download", "HubError", "HubRef", "card_configs", "fetch", "is_hub_ref", "parse_ref", "select_files"]

PREFIX = "hf:"
DATA_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
_REF = re.compile(r"^hf:(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?::(?P<config>[^@]+))?(?:@(?P<revision>.+))?$")
_TRUE = {"1", "true", "yes", "on"}


class HubError(MedresError):
    """A dataset could not be had from the hub (or its cache); the message says what to do."""


@dataclass(frozen=True)
class HubRef:
    repo_id: str
    config: str | None = None
    revision: str | None = None

    def __str__(self) -> str:
        return PREFIX + self.repo_id + (f":{self.config}" if self.config else "") + (f"@{self.revision}" if self.revision else "")


def is_hub_ref(text: str | Path) -> bool:
    return str(text).startswith(PREFIX)


def parse_ref(text: str) -> HubRef:
    m = _REF.match(str(text).strip())
    if m is None:
        raise ConfigError("dataset", f"{text!r} is not a hub name; write hf:OWNER/NAME, hf:OWNER/NAME:CONFIG or hf:OWNER/NAME:CONFIG@REVISION")
    return HubRef(m["repo"], (m["config"] or "").strip() or None, (m["revision"] or "").strip() or None)


@dataclass
class Download:
    ref: HubRef
    commit: str
    endpoint: str
    root: Path  # the snapshot folder in the cache
    files: list[str]  # repo paths, in order
    checksums: dict[str, str] = field(default_factory=dict)  # repo path -> sha256
    offline: bool = False

    @property
    def paths(self) -> list[Path]:
        return [self.root / f for f in self.files]

    @property
    def provenance(self) -> JSONObject:
        return {
            "dataset": f"{PREFIX}{self.ref.repo_id}",
            "config": self.ref.config,
            "revision": self.ref.revision or "main",
            "commit": self.commit,
            "endpoint": self.endpoint,
            "files": dict(self.checksums),
        }


# --------------------------------------------------------------------------- the card and file selection


def card_configs(readme: str) -> dict[str, list[tuple[str | None, str]]]:
    """config name -> [(split or None, data-file pattern)] from a dataset card's YAML header."""
    m = re.match(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", readme, re.S)
    if not m:
        return {}
    import yaml

    try:
        header = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError:
        return {}
    out: dict[str, list[tuple[str | None, str]]] = {}
    for cfg in header.get("configs") or [] if isinstance(header, dict) else []:
        if not isinstance(cfg, dict) or not cfg.get("config_name"):
            continue
        entries: list[tuple[str | None, str]] = []
        files = cfg.get("data_files")
        for entry in files if isinstance(files, list) else [files] if files else []:
            if isinstance(entry, str):
                entries.append((None, entry))
            elif isinstance(entry, dict):
                paths = entry.get("path")
                entries += [(entry.get("split"), p) for p in (paths if isinstance(paths, list) else [paths]) if isinstance(p, str)]
        out[str(cfg["config_name"])] = entries
    return out


def _words(path: str) -> list[str]:
    return [w for w in re.split(r"[/_.\-\s]+", path.lower()) if w]


def _matches(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.rstrip("/") + "/*") or path == pattern


def select_files(ref: HubRef, files: list[str], configs: dict[str, list[tuple[str | None, str]]]) -> list[str]:
    """The data files of `ref` among a commit's `files` (see the module docstring)."""
    data = [f for f in files if f.lower().endswith(DATA_SUFFIXES)]
    if ref.config is None:
        entries = [e for es in configs.values() for e in es]
        chosen = [f for f in data if any(_matches(f, p) for _, p in entries)] if entries else data
    else:
        name, _, split = ref.config.partition("/")
        cfg = next((c for c in configs if c.lower() == name.lower()), None)
        if cfg is not None:
            entries = configs[cfg]
            if split:
                entries = [e for e in entries if (e[0] or "").lower() == split.lower()]
                if not entries:
                    splits = sorted({s for s, _ in configs[cfg] if s})
                    raise HubError(f"{ref}: config {cfg} has no split {split!r} (its splits: {', '.join(splits) or 'none named'})")
            chosen = [f for f in data if any(_matches(f, p) for _, p in entries)]
        else:
            want = _words(ref.config)
            chosen = [f for f in data if all(w in _words(f) for w in want)]
            if not chosen:
                shown = (
                    f"its configs: {', '.join(configs)}"
                    if configs
                    else f"its data files: {', '.join(data[:12])}{', ...' if len(data) > 12 else ''}"
                    if data
                    else "it holds no data files"
                )
                raise HubError(f"{ref}: no config or data file matches {ref.config!r} ({shown})")
    if not chosen:
        raise HubError(f"{ref}: no data files ({', '.join(DATA_SUFFIXES)}) in this dataset at this revision")
    return sorted(chosen)


# --------------------------------------------------------------------------- downloading


def _env(name: str) -> str | None:
    v = os.environ.get(name, "").strip()
    return v or None


def _cache_dir() -> str | None:
    if _env("HF_HUB_CACHE"):
        return _env("HF_HUB_CACHE")
    home = _env("HF_HOME")
    return str(Path(home) / "hub") if home else None


def _offline() -> bool:
    return (_env("HF_HUB_OFFLINE") or "").lower() in _TRUE


def _client() -> Any:
    try:
        import huggingface_hub
    except ImportError:  # pragma: no cover - a declared dependency
        raise HubError("hf: names need huggingface_hub: pip install 'huggingface_hub>=0.24,<2'") from None
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
    return huggingface_hub


def _explain(ref: HubRef, e: BaseException, endpoint: str, offline: bool) -> HubError:
    from huggingface_hub import utils as hf  # the error classes, where 0.24 and 1.x both export them

    site = endpoint.rstrip("/")
    if isinstance(e, hf.GatedRepoError):
        has = " HF_TOKEN is set, but its account has not been granted access yet;" if _env("HF_TOKEN") else ""
        return HubError(
            f"{ref}: a gated dataset;{has} accept its terms at {site}/datasets/{ref.repo_id} while signed in, "
            f"then set HF_TOKEN to a read token of that account ({site}/settings/tokens) and rerun"
        )
    if isinstance(e, hf.RevisionNotFoundError):
        return HubError(f"{ref}: no revision {ref.revision or 'main'!r} in {ref.repo_id} on {site} (a branch, tag or commit id)")
    if isinstance(e, hf.RepositoryNotFoundError):
        return HubError(f"{ref}: no dataset {ref.repo_id} on {site} (check the name; a private dataset needs HF_TOKEN)")
    if isinstance(e, hf.LocalEntryNotFoundError) or offline:
        cache = _cache_dir() or "~/.cache/huggingface/hub"
        why = "HF_HUB_OFFLINE is set" if offline else f"{site} cannot be reached"
        return HubError(
            f"{ref}: not in the local cache ({cache}) and {why}; on a connected machine run this same "
            f"`medres import {ref}` command (whatever its --out: the download fills that cache), copy the cache folder here, and rerun"
        )
    if isinstance(e, hf.HfHubHTTPError):
        return HubError(f"{ref}: the hub at {site} answered {str(e).splitlines()[0]}")
    return HubError(f"{ref}: cannot download from {site} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")


def fetch(ref: HubRef) -> Download:
    """Download (or find in the cache) the data files of `ref`; see the module docstring."""
    hub = _client()
    from huggingface_hub import constants

    endpoint = _env("HF_ENDPOINT") or constants.ENDPOINT
    offline = _offline()
    common: dict[str, object] = dict(repo_type="dataset", cache_dir=_cache_dir(), endpoint=endpoint, token=_env("HF_TOKEN"), local_files_only=offline)
    try:
        root = Path(hub.snapshot_download(ref.repo_id, revision=ref.revision or "main", allow_patterns=["README.md"], **common))
        commit = root.name
        readme = root / "README.md"
        configs = card_configs(readme.read_text(encoding="utf-8", errors="replace")) if readme.is_file() else {}
        listed: dict[str, tuple[str, str]] = {}  # repo path -> (kind, id) as the listing gives it
        if offline:
            listing = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        else:
            api = hub.HfApi(endpoint=endpoint, token=common["token"])
            tree = [e for e in api.list_repo_tree(ref.repo_id, repo_type="dataset", revision=commit, recursive=True) if hasattr(e, "blob_id")]
            listed = {e.path: ("SHA-256", e.lfs.sha256) if e.lfs else ("git blob id", e.blob_id) for e in tree}
            listing = [e.path for e in tree]
        try:
            files = select_files(ref, listing, configs)
        except HubError:
            if offline:  # the cache holds other files of this dataset, not these
                raise _explain(ref, FileNotFoundError(ref.config or ref.repo_id), endpoint, True) from None
            raise
        root = Path(hub.snapshot_download(ref.repo_id, revision=commit, allow_patterns=files, **common))
    except HubError:
        raise
    except Exception as e:  # the client's own errors (HTTP, connection, cache), each explained in one line
        raise _explain(ref, e, endpoint, offline) from None
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        raise _explain(ref, FileNotFoundError(missing[0]), endpoint, True)
    checksums = {f: _checked(ref, root / f, f, listed.get(f) or _cache_id(root / f), endpoint) for f in files}
    return Download(ref, commit, endpoint, root, files, checksums, offline)


def _cache_id(path: Path) -> tuple[str, str] | None:
    """The id the hub's cache files `path`'s blob under (the name its link points to: a git blob
    id of 40 hex digits or an LFS SHA-256 of 64); None for a copy that is not a link (nothing to
    check against)."""
    if not path.is_symlink():
        return None
    name = Path(os.readlink(path)).name
    if re.fullmatch(r"[0-9a-f]{40}", name):
        return ("git blob id", name)
    return ("SHA-256", name) if re.fullmatch(r"[0-9a-f]{64}", name) else None


def _checked(ref: HubRef, path: Path, name: str, expected: tuple[str, str] | None, endpoint: str) -> str:
    """The SHA-256 of the downloaded file `name`, after checking its bytes against `expected`
    (kind, id). A mismatch removes the copy from the cache and is a HubError naming the file."""
    size = path.stat().st_size
    sha256, blob = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha256.update(chunk)
            blob.update(chunk)
    got = {"SHA-256": sha256.hexdigest(), "git blob id": blob.hexdigest()}
    if expected is not None and got[expected[0]] != expected[1]:
        kind, want = expected
        with contextlib.suppress(OSError):  # a bad copy must not be read from the cache later
            target = path.resolve()
            path.unlink()
            target.unlink()
        raise HubError(
            f"{ref}: {name} does not match the hub's listing: its {kind} is {got[kind]}, the listing says {want} "
            f"(the hub or mirror at {endpoint.rstrip('/')}, or the cache, holds other bytes under that id); "
            "nothing imported, the copy is removed from the cache"
        )
    return got["SHA-256"]
