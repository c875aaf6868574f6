"""Runtime plumbing every layer stands on: errors the user can act on (`errors`), the one file
reader and writer (`fileio`), seeded randomness (`seeding`), one process per directory (`lock`),
the garbage collector around heavy phases (`heap`), the event loop (`event_loop`), the counters of
one execution of calls (`counters`) and the circuit breaker of everything a run calls over the
network (`breaker`). Nothing here knows a suite, a family or a model.

May import: nothing."""
