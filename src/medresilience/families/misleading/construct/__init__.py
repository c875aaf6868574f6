"""Building misleading-context suites (MedMisBench-style). Every LLM call goes through models/ and
the store (calls.run_calls), so a rerun costs nothing for finished work.

    pipeline.py      build_misleading(items, generator, out, BuildOptions(...)), estimate_build(...)
                     for --dry-run
    inputs.py        items from an items .jsonl or any source file, with counted skip reasons
    prompts.py       every generator / checker prompt and JSON schema (hashed into manifests)
    engine.py        structured-output calls in rounds: parse, bounded re-asks, accounting
    checks.py        the deterministic item and bundle checks
    framing.py       the framing checks (patient / authority / neutral) as a table of cue patterns
    sensitivity.py   regenerate_subset, reassign_provenance (the study's sensitivity checks)

The fake generator for tests and benchmarks is the family's testing.py; the `medres build`
commands are its commands.py. Modules are imported on use (the CLI stays fast to start).

May import: the spine (every module outside families/) and this family's modules."""
