"""Stress-test construction, one module per family. Every LLM call goes through models/ and the
store (runner.run_calls), so a rerun costs nothing for finished work."""
