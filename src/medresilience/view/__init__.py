"""The read-only evidence viewer: every unit of one or more run directories (the messages sent
with the stressed part marked, the reply, how it was read, the judge's verdict, the call's
status and costs), filtered and counted, side by side with its clean pair and across models and
settings; a JSON API; and the same pages as static files.

Modules: index.py (the index of a run's units in SQLite's temporary database of a store opened
read-only: states, outcomes as `Outcome` flags, a trigram text index, pairings with another run;
the one module outside the store that runs SQL), query.py (run directories opened read-only,
filters, pages, counts, one unit's evidence), conversation.py (an agent unit's trajectory and a second turn's two turns), diff.py
(the stressed prompt marked against the clean one), pages.py (templates, the
stylesheet and the served URLs), render.py (the pages from the query layer), app.py (the FastAPI
app and its routes), export.py (the static pages).
Nothing imports it but the CLI; from mitigations it takes only the roles an agent's calls are
linked under (agent_run) and the name of the setting others are read against (`NONE`); from
model_names the one rule naming a model held by several runs (as a report over them names it).

May import: family, mitigations, models, records, run, runtime, store, suite."""
