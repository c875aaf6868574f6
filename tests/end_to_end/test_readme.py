"""The README's library example runs as written, with the embedded model swapped for the stub
server (the boundary we do not own) under the same label, and the suite for the tiny suite."""

from __future__ import annotations

import re

from conftest import ROOT, oracle_policy
from medresilience.testing.stub import StubServer

README = ROOT / "README.md"


def test_readme_library_example(tmp_path, tiny_suite, monkeypatch):
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### As a library") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    with StubServer(policy=oracle_policy) as srv:
        code = code.replace('parse_model_spec("embedded")', f'parse_model_spec("openai:stub,label=embedded-qwen,base_url={srv.base_url}")')
        code = code.replace('"SUITE_DIR"', repr(str(tiny_suite.path)))
        env: dict = {}
        exec(compile(code, str(README), "exec"), env)
    res = env["res"]
    assert res.results.headline("embedded-qwen")["type1_asr"].n == 3  # sampled Type 1 on the 3 clean-correct items
    assert (tmp_path / "runs" / "x" / "report" / "report.html").exists()
