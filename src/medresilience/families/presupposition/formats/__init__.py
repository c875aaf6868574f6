"""The study's files: the myth records (myths) and the Cancer-Myth release layout (release: import,
detect, export).

May import: the spine (every module outside families/) and this family's modules."""
