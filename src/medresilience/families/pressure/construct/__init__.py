"""Building pressure suites: the second turns from a misleading suite's bundles (each bundle's seeded
Type 1 target and its false sentence, framed by provenance) or, for the template conditions, from
any items file (build: `medres build pressure`).

May import: the spine (every module outside families/) and this family's modules."""
