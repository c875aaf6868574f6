"""The built-in test families. Importing this package registers each of them with
`medresilience.family`; the registry imports it the first time it is read.

May import: its families (each registers itself)."""

from . import adaptive, misleading, noise, pressure, presupposition  # noqa: F401
