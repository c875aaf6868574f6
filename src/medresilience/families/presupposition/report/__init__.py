"""The false-presupposition report: its section as report parts (section), the paired compare (compare) and
its mitigation trade-off rows (tradeoff).

May import: the spine (every module outside families/) and this family's modules."""
