"""Building pressure suites: the second turns from a misleading suite's bundles (each bundle's seeded
Type 1 target and its false sentence, framed by provenance) or from any items file: the template
conditions with no model, the claim conditions from bundles a generator writes through the
misleading family's builder (build: `medres build pressure`).

May import: the spine (every module outside families/), this family's modules and the misleading
family (its bundles, its items reader and its builder)."""
