"""The adaptive family's report: its section (section).

May import: the spine (every module outside families/) and this family's modules."""
