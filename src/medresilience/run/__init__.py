"""The run path, from the command to results.json: one resolved run (`resolved`: the suite, its
family, options, settings and their models, keys), the units it plans (`selection`, `call_order`,
`answer_format`, `stopping`), the runner of a run's units and their dependent calls (`runner`,
`followups`; each call through the one execution path, `calls.run_calls`), the evaluation as a library call (`evaluation`), and what a finished run
is read as: the results frame (`frame`), the results schema (`results`), how replies were read (`reading`), headline rates as
functions of labels (`label_rates`), the summary (`summary`, with a run's label-audit block as
text: `audit_text`); what a run will do, said before it
starts (`run_preview`), the suite a run directory was made from (`run_suite`) and the bundled
sample suite (`bundled_suite`). Importing the package imports none of its modules.

May import: calls, family, mitigations, models, records, runtime, score, scoring, stats, store, suite."""
