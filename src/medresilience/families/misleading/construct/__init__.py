"""Stress-test construction, one module per family. Every LLM call goes through models/ and the
store (runner.run_calls), so a rerun costs nothing for finished work.

Misleading context (MedMisBench-style):

    misleading.py    the pipeline: build_misleading(items, generator, out, BuildOptions(...)),
                     estimate_build(...) for --dry-run
    inputs.py        items from an items .jsonl or any source file, with counted skip reasons
    prompts.py       every generator / checker prompt and JSON schema (hashed into manifests)
    engine.py        structured-output calls in rounds: parse, bounded re-asks, accounting
    checks.py        the deterministic item and bundle checks
    framing.py       the framing checks (patient / authority / neutral) as a table of cue patterns
    sensitivity.py   regenerate_subset, reassign_provenance (the study's sensitivity checks)
    export.py        Parquet (Hugging Face datasets) and release-layout export
    stub_policy.py   FakeGenerator: a stub-server policy for tests, benchmarks and demos
    cli.py           `medres build ...`

Modules are imported on use (the CLI stays fast to start)."""
