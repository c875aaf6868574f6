"""The answer-loop settings' tests: a package, so their conftest is not the root conftest's namesake."""
