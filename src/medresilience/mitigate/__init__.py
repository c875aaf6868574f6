"""Mitigations that are found rather than written: `medres mitigate optimise` searches for a
precaution system prompt with GEPA (the `gepa` package, an optional extra) on a small mix of items
drawn from several suites, scored by each family's own metric, and writes it to a versioned file
that `--setting optimised:FILE` applies at evaluation time.

- `candidate`: the file (schema, version, prompt, train/val split, models, budget, seed, score
  history, package versions), its loading and checks, and the overlap of a suite with its split;
- `examples`: the seeded draw of training and validation examples and their per-example metric;
- `adapter`: GEPA's adapter: renders, calls (through `calls.run_calls`, every call stored) and scores;
- `optimise`: the optimisation, end to end.

Nothing here imports gepa until an optimisation runs."""

from __future__ import annotations

from .candidate import SCHEMA, VERSION, OptimisedPrompt, load_candidate

__all__ = ["SCHEMA", "VERSION", "OptimisedPrompt", "load_candidate"]
