"""Suite building shared by every family's construct/: the build's work directory (`workspace`:
lock, call store, served models), the stages of structured-output calls (`stages`), what a build
keeps and returns (`construction`) and `medres import` (`importing`: a source file, a release file
or a hub name into items or a suite). The builders themselves are the families' own.

May import: calls, family, models, records, runtime, sources, store, suite."""
