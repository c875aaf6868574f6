"""Test helpers that ship with the package: a local OpenAI-compatible stub server (`stub`), a local
Hugging Face Hub (`hub_server`) and a local search service of the agent's HTTP backend
(`search_server`), the last two served the same way (`loopback`).

May import: nothing of medresilience (each helper stands alone)."""
