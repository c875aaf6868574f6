"""Mitigations as named settings, and the optimiser that finds one. A setting turns the messages a
family renders into the messages sent; `none` leaves them as they are. Every unit carries its
setting's name, so the store, frame, report and compare pair units across settings by item and
probe. A setting's texts are recorded with the run and hashed (run.json `prompts`); what it changes
reaches every request key through the messages.

A setting is named alone (`none`, `caution`) or, when it needs configuring, as `NAME:ARGS`
(`retrieval:corpus.sqlite,k=3`): a factory registered for NAME reads ARGS and returns the setting,
whose name is the whole text as given, so two configurations of one mitigation are two settings
of one run. `get(text)` resolves either form; `names()` lists what can be asked for.

A setting that needs the item itself (to keep its answer key out of what it adds) gives
`apply_item(messages, item)`; the runner calls `Setting.apply_to(messages, item)`, which uses it
when present and `apply(messages)` otherwise.

What a setting does besides changing the messages is declared in its type, as typed optional
fields of `Setting` (a pre-call, an answer loop, a marker, the models it calls, suite warnings):
the spine reads those fields and never asks a setting what it can do by attribute name. The
roles of the calls a setting links to its units are registered in `roles`, by kind.

- `setting`: `Setting`, `PreCall`, `PreCallStep`, `AnswerLoop`, `NONE`, `add_to_system`;
- `registry`: `register`, `register_factory`, `get`, `names` (and the `none` setting);
- `roles`: `LinkedRole`, `register_role` and the readers by kind (note, step, answer, tool, summary);
- the settings, one module each, registering themselves when imported: `caution`, `monitor`
  (`monitor[:SPEC]`), `retrieval` (`retrieval:INDEX`), `optimised` (`optimised:FILE`), `agent`
  (`agent:INDEX|URL`: a search agent whose steps the runner runs through `agent_run`, over the
  backends of `search`), `team` (`team[:SPEC][,...]`: a clinical team after MDAgents whose calls the
  runner runs through `team_run`);
- the optimiser behind `medres mitigate optimise`, which searches for a precaution system prompt
  with GEPA (the `gepa` package, an optional extra) on a small mix of items drawn from several
  suites, scored by each family's own metric, and writes it to the versioned file `optimised:FILE`
  applies: `candidate` (the file, its loading and checks, the overlap of a suite with its split),
  `examples` (the seeded draw of training and validation examples and their per-example metric),
  `adapter` (GEPA's adapter: renders, calls through `calls.run_calls`, scores) and `optimise` (the
  optimisation, end to end). Nothing here imports gepa until an optimisation runs.

Submodules import from each other, never from this module; this module imports the ones that
register themselves and states the public API. The package imports the spine (records, calls,
store, family, scoring, models, corpus), never a family, the report layer or the CLI.

May import: build, calls, corpus, family, models, records, registry, runtime, score, scoring, store, suite."""

from __future__ import annotations

from .agent import AgentConfig, AgentSetting  # registers the agent factory
from .candidate import SCHEMA, VERSION, OptimisedPrompt, load_candidate
from .caution import CAUTION_INSTRUCTION  # registers caution
from .monitor import MONITOR  # registers monitor and the monitor:SPEC factory
from .optimised import OptimisedSetting  # registers the optimised:FILE factory
from .registry import get, names, register, register_factory
from .retrieval import EVIDENCE_INSTRUCTION  # registers the retrieval factory
from .setting import NONE, Messages, Setting, add_to_system
from .team import TEAM, TeamConfig, TeamSetting  # registers team and the team:SPEC factory

__all__ = [
    "CAUTION_INSTRUCTION",
    "EVIDENCE_INSTRUCTION",
    "MONITOR",
    "NONE",
    "SCHEMA",
    "TEAM",
    "VERSION",
    "AgentConfig",
    "AgentSetting",
    "Messages",
    "OptimisedPrompt",
    "OptimisedSetting",
    "Setting",
    "TeamConfig",
    "TeamSetting",
    "add_to_system",
    "get",
    "load_candidate",
    "names",
    "register",
    "register_factory",
]
