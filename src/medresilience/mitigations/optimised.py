"""`optimised:FILE.json`: a precaution prompt found by `medres mitigate optimise` (GEPA), added to
the system message as a paragraph of its own (a system message is added when there is none).

    medres eval --setting none --setting optimised:precaution.json ...

The factory reads and checks the file (mitigations.candidate: its format, version, prompt hash); a bad
file is one error line naming the file and the field. The setting's texts, recorded with the run
and hashed, are the prompt, the file's SHA-256, a one-line summary of the optimisation and its
train/val split (suite hashes and item ids), so a run directory says which items the prompt was
found on. `suite_warnings(suite)` says when a suite shares items with that split (the same suite,
or items with the same id or content): its scores under this setting are not held out. The
optimiser applies a candidate prompt with `prompt_adder`, the function this setting applies, so
what GEPA scored is what the setting sends."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .registry import register_factory
from .setting import Messages, Setting, add_to_system

if TYPE_CHECKING:  # pragma: no cover
    from ..suite import Suite

NAME = "optimised"
USAGE = "optimised:FILE.json (write one with: medres mitigate optimise --train SUITE --val SUITE ... --out FILE.json)"


def prompt_adder(prompt: str) -> Callable[[Messages], Messages]:
    """How an optimised prompt reaches a request: a paragraph appended to the system message."""
    return add_to_system(prompt)


@dataclass(frozen=True)
class OptimisedSetting(Setting):
    """The setting of one optimised-prompt file; `candidate` is the checked file, and its
    `suite_warnings(suite)` one line per split of the file that shares items with `suite` (none
    when held out)."""

    candidate: Any = field(default=None, compare=False, repr=False)


def suite_warnings(suite: Suite, setting_names: Iterable[str]) -> list[str]:
    """The warnings of a run's settings about its suite (a setting that has none gives none):
    what a run records in run.json under `warnings`."""
    from .registry import get

    return [w for name in setting_names for w in get(name).warnings_about(suite)]


def _path(args: str) -> Path:
    return Path(args.strip())


def _stamp(args: str) -> object:
    try:
        st = _path(args).stat()
    except OSError:
        return None
    return (str(_path(args).resolve()), st.st_mtime_ns, st.st_size, st.st_ino)


def make(args: str, name: str) -> Setting:
    from .candidate import file_hash, load_candidate

    path = _path(args)
    cand = load_candidate(path)
    texts = {
        "prompt": cand.prompt,
        "prompt_hash": cand.prompt_hash,
        "file_hash": file_hash(path),
        "optimiser": cand.summary(),
        "split": cand.split_text(),
    }
    description = f"the optimised precaution prompt of {path} ({cand.prompt_hash}) in the system message"
    where = f"--setting {name}"

    def overlap(suite: Suite) -> list[str]:
        return cand.overlap(suite, label=where)

    return OptimisedSetting(name, description, prompt_adder(cand.prompt), texts, suite_warnings=overlap, candidate=cand)


register_factory(NAME, make, USAGE, _stamp)
