"""Test helpers that ship with the package: a local OpenAI-compatible stub server."""
