"""How a model is named when one report, comparison or viewer holds several runs: the one rule, kept
here and nowhere else.

The rule. A model's name is its label (`label=` of its spec) unless that label is ambiguous among
the runs shown together; then, in every one of those runs, it is run-qualified: `label [run]`,
`run` being the run's name there (its directory's name; the report adds `#2`, `#3` to a name that
two directories share). A label is ambiguous when

- two runs of the same family hold it: their numbers would otherwise fall into one row (one run's
  in a plot, the other's in its table) or be averaged as if they were two models under one name; or
- its runs record different models for it (the provider and model name in run.json).

Otherwise the label stands alone, and one model's runs of different families meet in one row of
the cross-family profile (that is what the profile is for). A run-qualified name is one entry:
a mean across models takes one value per entry, and a sentence that counts them says how many
entries and how many models they are (`entries_phrase`). Links to the evidence viewer carry the
label itself (the viewer filters one run's units by label): `ModelNames.label_of` undoes a name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunModels:
    """What the rule reads of one run: its name, its family and, per model label, the model it
    records (provider:model, or "" when the run does not say)."""

    run: str
    family: str
    models: Mapping[str, str]


@dataclass(frozen=True)
class ModelNames:
    """Each (run, label) of a set of runs named by the rule; `label_of`/`run_of` read a name back."""

    names: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: why each run-qualified label is ambiguous, in words
    why: Mapping[str, str] = field(default_factory=dict)

    def name(self, run: str, label: str) -> str:
        """The model's name in views over these runs (its label for a (run, label) not among them)."""
        return self.names.get((run, label), label)

    @property
    def qualified(self) -> frozenset[str]:
        """The labels named with their runs."""
        return frozenset(label for (_run, label), name in self.names.items() if name != label)

    def label_of(self, name: str) -> str:
        """The label a name stands for (a name that is no model's here is returned as it is)."""
        return self._inverse().get(name, (None, name))[1]

    def run_of(self, name: str) -> str | None:
        """The run a run-qualified name names (None for a label that stands alone)."""
        return self._inverse().get(name, (None, name))[0]

    def notes(self) -> list[str]:
        """One line per run-qualified label: its runs, why, and how it is named."""
        out = []
        for label, why in self.why.items():
            runs = [run for (run, lab) in self.names if lab == label]
            out.append(
                f"model label {label!r} is in runs {', '.join(runs)} ({why}): each run's numbers are shown as "
                f"{', '.join(qualify(label, r) for r in runs)}, never pooled, and a mean across models counts each as one entry"
            )
        return out

    def _inverse(self) -> dict[str, tuple[str | None, str]]:
        out: dict[str, tuple[str | None, str]] = {}
        for (run, label), name in self.names.items():
            out[name] = (run if name != label else None, label)
        return out


def distinct_run_names(names: Iterable[str]) -> list[str]:
    """Runs' names made distinct in order: a name met before gets `#2`, `#3`, ... (two run
    directories of one name in different folders)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def qualify(label: str, run: str) -> str:
    """A run-qualified name."""
    return f"{label} [{run}]"


def model_names(runs: Iterable[RunModels]) -> ModelNames:
    """The names of every (run, label) of `runs` by the rule (module docstring)."""
    runs = list(runs)
    in_family: dict[tuple[str, str], int] = {}
    models: dict[str, set[str]] = {}
    for r in runs:
        for label, model in r.models.items():
            in_family[(r.family, label)] = in_family.get((r.family, label), 0) + 1
            if model:
                models.setdefault(label, set()).add(model)
    why: dict[str, str] = {}
    for (fam, label), n in in_family.items():
        if n > 1:
            why.setdefault(label, f"{n} runs of {fam or 'one family'}")
    for label, ms in models.items():
        if len(ms) > 1:
            why[label] = ", ".join(filter(None, [why.get(label), f"different models: {', '.join(sorted(ms))}"]))
    return ModelNames({(r.run, label): qualify(label, r.run) if label in why else label for r in runs for label in r.models}, why)


def recorded_models(config: Mapping[str, Any] | None, labels: Iterable[str]) -> dict[str, str]:
    """label -> provider:model of a run's labels, as its run.json records them ("" when it does not)."""
    specs = {str(m.get("label")): f"{m.get('kind') or ''}:{m.get('model') or ''}" for m in (config or {}).get("models") or [] if m.get("label") is not None}
    return {label: specs.get(label, "") for label in labels}


def entries_phrase(names: Sequence[str], names_of: ModelNames | None = None) -> str:
    """How many models a mean over `names` (one value each) averages, in words: "3 models", or,
    when some are one model's runs, "3 entries of 2 models (m: one entry per run, mis-a and mis-b)"."""
    names = list(dict.fromkeys(names))
    if names_of is None:
        return f"{len(names)} models"
    labels: dict[str, list[str]] = {}
    for n in names:
        labels.setdefault(names_of.label_of(n), []).append(str(names_of.run_of(n)))
    if len(labels) == len(names):
        return f"{len(names)} models"
    shared = "; ".join(f"{label}: one entry per run, {' and '.join(runs)}" for label, runs in labels.items() if len(runs) > 1)
    return f"{len(names)} entries of {len(labels)} model{'s' if len(labels) > 1 else ''} ({shared})"
