"""Test helpers that ship with the package: a local OpenAI-compatible stub server.

May import: nothing of medresilience (the stub server and the hub server stand alone)."""
