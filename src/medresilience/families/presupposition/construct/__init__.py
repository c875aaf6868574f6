"""Building false-presupposition suites: the adversarial generator / responder / verifier loop over
myth records, categorisation, balancing and the optional correction checker
(`medres build presupposition`). The entry point is `build.build_presupposition`; the seed records
are read by `seeds`. The package imports nothing: its modules import each other by name."""
