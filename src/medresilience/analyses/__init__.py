"""Commands over finished runs, and before one: cross-model overlap (`overlap`), thinking time
per model configuration (`thinking`), and planning a run's size for a target power (`planning`,
`medres plan`). Each reads a run directory or a family's declared comparisons and writes tables;
none changes a run.

May import: family, report, runtime, score, scoring, stats, store."""
