"""The pressure report: its section (section) and the paired compare (compare).

May import: the spine (every module outside families/) and this family's modules."""
