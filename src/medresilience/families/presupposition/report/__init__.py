"""The false-presupposition report: its section (section, templates/), the paired compare (compare) and
its mitigation trade-off rows (tradeoff).

May import: the spine (every module outside families/) and this family's modules."""
