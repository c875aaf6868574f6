"""What a run will do, said before it starts: the suite, the model(s), the settings and options,
how many units it plans (each an answer call unless stored), the output folder, and what the
folder already holds (a new run, a resume of the same run, or an earlier run with other options
whose results this one replaces: its stored calls are kept and reused where identical).

    lines = preview(run, out).lines()   # run: the resolved run (resolved.resolve_run)

Counting reads the suite's items once (the family's selection of probes, the item limit, the
sample order), as the run itself will; nothing is called or written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..suite import Suite
from .resolved import ResolvedRun
from .selection import unit_chunks

__all__ = ["Preview", "earlier_run", "preview"]

#: the run.json keys whose difference is named when a run replaces an earlier one
_COMPARED = ("suite", "models", "options", "decoding", "prompts", "medresilience")


@dataclass
class Preview:
    suite: str
    family: str
    items: int
    units_per_model: int
    models: list[str]
    settings: list[str]
    scoring: str
    epochs: int
    out: Path
    state: str  # one line: new, resume, or what this run replaces
    extras: list[str] = field(default_factory=list)

    @property
    def units(self) -> int:
        return self.units_per_model * len(self.models) * len(self.settings) * self.epochs

    def lines(self) -> list[str]:
        per = f"{self.units_per_model} per model and setting" + (f", x{self.epochs} epochs" if self.epochs > 1 else "")
        return [
            f"suite: {self.suite} ({self.family}; {self.items} items)",
            f"model{'s' if len(self.models) > 1 else ''}: {', '.join(self.models)}; setting{'s' if len(self.settings) > 1 else ''}: "
            f"{', '.join(self.settings)}; scoring: {self.scoring}",
            f"units: {self.units} ({per}), each one answer call unless the store holds it" + "".join(f"; {x}" for x in self.extras),
            f"output: {self.out} ({self.state})",
        ]


def _suite_name(suite: Suite) -> str:
    from .bundled_suite import sample_suite_dir

    name = suite.manifest.name
    if suite.path is None or Path(suite.path).resolve() == sample_suite_dir().resolve():
        return f"{name} (bundled)"
    return f"{name} at {suite.path}"


def earlier_run(out: Path, config: Mapping[str, object]) -> str:
    """What `out` holds against a run of `config` (run.json's content): a new folder, the same run
    (resumed), or another run whose results this one replaces, naming what differs."""
    previous = out / "run.json"
    if not (out / "store.sqlite").exists():
        return "new run directory"
    try:
        stored = json.loads(previous.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "resumes: calls in its store are reused"
    now = json.loads(json.dumps(config, default=str))
    differ = [k for k in _COMPARED if stored.get(k) != now.get(k)]
    if not differ:
        return "resumes the same run: calls in its store are reused, only unfinished ones are made"
    if "options" in differ:
        opts_before, opts_now = stored.get("options") or {}, now.get("options") or {}
        keys = sorted(k for k in {*opts_before, *opts_now} if opts_before.get(k) != opts_now.get(k))
        differ[differ.index("options")] = "options (" + ", ".join(keys) + ")"
    return (
        f"holds an earlier run with other {', '.join(differ)}: this run's results.json and report replace the earlier ones; "
        "its stored calls are kept and reused where identical"
    )


def preview(run: ResolvedRun, out: Path | str, config: Mapping[str, object] | None = None) -> Preview:
    """What the resolved `run` into `out` will do (see the module docstring). `config`: the run's
    run.json content (evaluation.run_config), to tell a resume from a replacement; without it an
    existing folder is said to resume."""
    suite, specs, opts, family, fopts = run.suite, run.specs, run.options, run.family, run.family_options
    items: set[str] = set()
    units = 0
    for pairs in unit_chunks(suite, family, fopts, opts, records=4096):
        units += len(pairs)
        items.update(item.id for item, _ in pairs)
    out = Path(out)
    state = (
        earlier_run(out, config)
        if config is not None
        else ("resumes: calls in its store are reused" if (out / "store.sqlite").exists() else "new run directory")
    )
    extras = []
    if opts.extract is not None:
        extras.append(f"replies the rules leave unread are read by {opts.extract.label}")
    if opts.until is not None:
        from .stopping import Stopping, describe

        looks = Stopping.of(opts.until, family, [s.label for s in specs], opts.settings, len(items))
        extras.append(f"fewer when its stopping rule is met ({describe(looks.rule, looks.arms)})")
    return Preview(
        _suite_name(suite), family.name, len(items), units, [s.label for s in specs], list(opts.settings), opts.scoring, opts.epochs, out, state, extras
    )
