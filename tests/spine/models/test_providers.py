"""Model names as the field writes them: PROVIDER/MODEL resolves to the provider's endpoint and
usual key variable, <PROVIDER>_BASE_URL overrides it, provider quirks shape what is sent (checked
at the stub server), medres.toml supplies defaults that flags override, and no key value is ever
written anywhere."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import one_error_line, oracle_policy, stub_spec
from medresilience.cli import app
from medresilience.cli.config import load_config
from medresilience.models.openai_compatible import ModelCallError, OpenAICompatibleModel
from medresilience.models.providers import PRICES, PROVIDERS, REASONING_BUDGET, known_price
from medresilience.models.spec import ModelSpec, SpecDefaults, parse_model_spec
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import ConfigError, InputError, MedresError
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer

runner = CliRunner()
FAKE_KEY = "sk-fake-7d1e0c9a4b2f-do-not-store"

KEY_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "TOGETHER_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No provider variable from the outside, wide consoles, and a working directory without a
    config file."""
    for p in PROVIDERS.values():
        monkeypatch.delenv(p.base_url_env, raising=False)
    for k in KEY_VARS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("COLUMNS", "220")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


# ---- naming a model


@pytest.mark.parametrize(
    ("text", "url", "key_env", "model"),
    [
        ("openai/gpt-4o-mini", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini"),
        ("openai:gpt-4o-mini", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini"),
        ("anthropic/claude-haiku-4-5", "https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY", "claude-haiku-4-5"),
        ("gemini/gemini-2.0-flash", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY", "gemini-2.0-flash"),
        ("mistral/mistral-large-latest", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "mistral-large-latest"),
        ("together/meta-llama/Llama-3.3-70B-Instruct-Turbo", "https://api.together.xyz/v1", "TOGETHER_API_KEY", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
        ("openrouter/openai/gpt-4o-mini", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openai/gpt-4o-mini"),
        ("groq/llama-3.3-70b-versatile", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "llama-3.3-70b-versatile"),
        ("deepseek/deepseek-chat", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "deepseek-chat"),
        ("vllm/Qwen/Qwen2.5-7B-Instruct", "http://localhost:8000/v1", None, "Qwen/Qwen2.5-7B-Instruct"),
        ("sglang/Qwen/Qwen2.5-7B-Instruct", "http://localhost:30000/v1", None, "Qwen/Qwen2.5-7B-Instruct"),
        ("ollama/llama3.2:3b", "http://localhost:11434/v1", None, "llama3.2:3b"),
        ("llamacpp/qwen2.5-1.5b", "http://localhost:8080/v1", None, "qwen2.5-1.5b"),
    ],
)
def test_provider_forms_resolve(monkeypatch, text, url, key_env, model):
    if key_env:
        monkeypatch.setenv(key_env, FAKE_KEY)
    s = parse_model_spec(text)
    assert (s.kind, s.base_urls, s.api_key_env, s.model, s.label) == ("openai", [url], key_env, model, model)
    assert s.provider == text.split("/")[0].split(":")[0]
    assert s.api_key() == (FAKE_KEY if key_env else "not-needed")
    assert FAKE_KEY not in json.dumps(s.public())  # only the variable's name


def test_missing_key_names_the_variable():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        parse_model_spec("openai/gpt-4o-mini").api_key()
    with pytest.raises(ConfigError, match=r"GEMINI_API_KEY is not set \(nor GOOGLE_API_KEY\)"):
        parse_model_spec("gemini/gemini-2.5-pro").api_key()


def test_missing_key_says_what_to_do(monkeypatch):
    """The error names the fixes: export the variable, name another one, or (a provider's spec
    pointed at a server of one's own) the spec of an endpoint that takes no key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as e:
        parse_model_spec("openai/my-model,base_url=http://127.0.0.1:9/v1").api_key()
    said = str(e.value)
    assert "export OPENAI_API_KEY=" in said and "api_key_env=VAR" in said
    assert "openai:my-model,base_url=URL" in said
    no_key = parse_model_spec("openai:my-model,base_url=http://127.0.0.1:9/v1")
    assert no_key.api_key() == "not-needed"  # the form the hint names needs no key
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(ConfigError) as e:
        parse_model_spec("openai:my-model,base_url=http://127.0.0.1:9/v1,api_key_env=MY_KEY").api_key()
    assert "export MY_KEY=" in str(e.value) and "takes no key" not in str(e.value)


def test_gemini_reads_google_api_key_as_fallback(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_KEY)
    s = parse_model_spec("gemini/gemini-2.0-flash")
    assert s.api_key_env == "GOOGLE_API_KEY" and s.api_key() == FAKE_KEY
    monkeypatch.setenv("GEMINI_API_KEY", "other")
    assert parse_model_spec("gemini/gemini-2.0-flash").api_key_env == "GEMINI_API_KEY"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "groq", "vllm", "ollama", "llamacpp"])
def test_base_url_variable_overrides(monkeypatch, provider):
    monkeypatch.setenv(f"{provider.upper()}_BASE_URL", "http://proxy.internal:9999/v1")
    assert parse_model_spec(f"{provider}/some-model").base_urls == ["http://proxy.internal:9999/v1"]
    # a base_url in the spec wins over the variable; the key variable stays the provider's
    s = parse_model_spec(f"{provider}/some-model,base_url=http://a/v1|http://b/v1")
    assert s.base_urls == ["http://a/v1", "http://b/v1"] and s.api_key_env == PROVIDERS.get(provider).key_env()


def test_settings_after_a_comma_and_the_old_form():
    s = parse_model_spec("openai/gpt-4o-mini,temperature=0.3,concurrency=8,api_key_env=MY_KEY,label=mini")
    assert (s.temperature, s.concurrency, s.api_key_env, s.label) == (0.3, 8, "MY_KEY", "mini")
    # the existing form: any endpoint, no key unless named, and the parameters it sent before (the default reply
    # budget is 512 tokens since replies cut at 16 were counted as attack successes: docs/concepts/reading.md, "How replies are read")
    old = parse_model_spec("openai:Qwen/Qwen2.5-7B-Instruct,base_url=http://gpu1:8000/v1|http://gpu2:8000/v1,concurrency=128,top_p=0.9")
    assert old.provider is None and old.api_key_env is None and old.base_urls == ["http://gpu1:8000/v1", "http://gpu2:8000/v1"]
    assert old.decoding() == {"temperature": 0.0, "max_tokens": 512, "top_p": 0.9, "seed": 0}
    assert old.decoding(max_tokens=1, logprobs=20) == {"temperature": 0.0, "max_tokens": 1, "top_p": 0.9, "seed": 0, "logprobs": True, "top_logprobs": 20}
    assert old.identity() == {"kind": "openai", "model": "Qwen/Qwen2.5-7B-Instruct", "temperature": 0.0, "top_p": 0.9, "seed": 0, "extra_body": {}}
    # the old form at a known API's host gets that provider's key variable and quirks
    o3 = parse_model_spec("openai:o3,base_url=https://api.openai.com/v1")
    assert o3.provider == "openai" and o3.api_key_env == "OPENAI_API_KEY" and "max_completion_tokens" in o3.decoding()
    assert parse_model_spec("embedded").kind == "embedded" and parse_model_spec("embedded:smollm2").label == "embedded-smollm2"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("gpt-4o-mini", ["PROVIDER/MODEL", "openai", "anthropic"]),
        ("azure/gpt-4o", ["PROVIDER/MODEL", "groq"]),
        ("openai/gpt-4o-mini,temprature=0", ["temprature", "unknown setting"]),
        ("openai/gpt-4o-mini,reasoning=maybe", ["reasoning", "true or false"]),
        ("openai/gpt-4o-mini,provider=azure", ["unknown provider 'azure'"]),
    ],
)
def test_bad_names_say_what_is_known(text, words):
    with pytest.raises(ConfigError) as e:
        parse_model_spec(text)
    assert all(w in str(e.value) for w in words), str(e.value)


# ---- quirks


def test_supports_and_decoding_follow_the_table():
    claude = parse_model_spec("anthropic/claude-haiku-4-5")
    assert not claude.supports("seed") and not claude.supports("logprobs") and claude.supports("temperature")
    assert "seed" not in claude.decoding() and claude.decoding()["temperature"] == 0.0
    assert parse_model_spec("mistral/mistral-small-latest,seed=7").decoding() == {"temperature": 0.0, "max_tokens": 512, "random_seed": 7}
    assert "seed" not in parse_model_spec("gemini/gemini-2.0-flash").decoding()
    gpt = parse_model_spec("openai/gpt-4o-mini,top_p=0.5")
    assert gpt.supports("logprobs") and gpt.decoding() == {"temperature": 0.0, "max_tokens": 512, "top_p": 0.5, "seed": 0}
    for name in ("o1", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini"):
        r = parse_model_spec(f"openai/{name},top_p=0.5,temperature=0.7")
        assert not r.supports("temperature") and not r.supports("logprobs"), name
        assert r.decoding(max_tokens=16) == {"max_completion_tokens": REASONING_BUDGET, "seed": 0}, name
    assert parse_model_spec("openai/gpt-5-chat-latest").supports("temperature")
    # the spec's max_tokens is the reasoning budget; a larger budget asked by a call wins
    small = parse_model_spec("openai/o3,max_tokens=2000,reasoning_effort=low")
    assert small.decoding(max_tokens=16) == {"max_completion_tokens": 2000, "seed": 0, "reasoning_effort": "low"}
    assert small.decoding(max_tokens=4096)["max_completion_tokens"] == 4096
    # reasoning=true for an endpoint the table does not know; reasoning=false turns the rule off
    assert parse_model_spec("openai:my-o3,base_url=http://proxy/v1,reasoning=true").decoding()["max_completion_tokens"] == REASONING_BUDGET
    assert parse_model_spec("openai/o3,reasoning=false").decoding() == {"temperature": 0.0, "max_tokens": 512, "seed": 0}
    # the embedded models answer the terse prompt within a few tokens on a CPU: they keep 16 (docs/concepts/reading.md)
    assert parse_model_spec("embedded").decoding()["max_tokens"] == 16 and parse_model_spec("embedded:smollm2").max_tokens == 16
    ds = parse_model_spec("deepseek/deepseek-reasoner")
    assert ds.decoding() == {"max_tokens": 32_768} and not ds.supports("logprobs")
    with pytest.raises(ValueError, match="unknown feature"):
        gpt.supports("telepathy")
    with pytest.raises(ConfigError, match="logprobs"):
        claude.decoding(max_tokens=1, logprobs=20)


def test_reasoning_model_gets_the_accepted_parameters(tmp_path, tiny_suite, monkeypatch):
    """o4-mini through the CLI: the stub sees max_completion_tokens and no temperature/top_p/
    max_tokens; the run records the model's resolved settings and the stored request params."""
    seen: list[dict] = []

    def recording(messages, request):
        seen.append(request)
        return oracle_policy(messages, request)

    with StubServer(policy=recording) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        out = tmp_path / "run"
        r = runner.invoke(
            app, ["eval", "--suite", str(tiny_suite.path), "--model", "openai/o4-mini,reasoning_effort=low,top_p=0.9", "--out", str(out), "--limit", "1"]
        )
        assert r.exit_code == 0, r.output
    assert seen
    for body in seen:
        assert body["model"] == "o4-mini" and body["max_completion_tokens"] == REASONING_BUDGET and body["reasoning_effort"] == "low"
        assert not {"temperature", "top_p", "max_tokens", "logprobs"} & set(body)
    run = json.loads((out / "run.json").read_text())
    m = run["models"][0]
    assert (m["provider"], m["max_tokens"], m["price_source"], m["price_date"]) == ("openai", REASONING_BUDGET, "table", known_price("openai", "o4-mini").date)

    con = sqlite3.connect(out / "store.sqlite")
    params = [json.loads(p) for (p,) in con.execute("SELECT params FROM requests")]
    con.close()
    assert params and all(p.get("max_completion_tokens") == REASONING_BUDGET and "temperature" not in p for p in params)


def test_provider_without_seed_gets_none_sent(tmp_path, tiny_suite, monkeypatch):
    seen: list[dict] = []

    def recording(messages, request):
        seen.append(request)
        return oracle_policy(messages, request)

    with StubServer(policy=recording) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        r = runner.invoke(
            app,
            ["eval", "--suite", str(tiny_suite.path), "--model", "anthropic/claude-haiku-4-5", "--seed", "3", "--out", str(tmp_path / "run"), "--limit", "1"],
        )
        assert r.exit_code == 0, r.output
    assert seen and all("seed" not in b and b["temperature"] == 0.0 and b["max_tokens"] == 512 for b in seen)


def test_logprob_scoring_on_a_provider_without_logprobs_fails_in_one_line(tmp_path, tiny_suite, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with StubServer(policy=oracle_policy) as srv:
        monkeypatch.setenv("GROQ_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        out = tmp_path / "run"
        base = ["eval", "--suite", str(tiny_suite.path), "--scoring", "logprob", "--out", str(out)]
        line = one_error_line(runner.invoke(app, [*base, "--model", "openai/stub-model", "--model", "groq/llama-3.3-70b-versatile"]))
        assert "llama-3.3-70b-versatile" in line and "groq" in line and "logprobs" in line and "--scoring letter" in line
        line = one_error_line(runner.invoke(app, [*base, "--model", "openai/o3"]))
        assert "o3" in line and "logprobs" in line
        assert not out.exists() and srv.stats.total == 0
        # a provider with log-probabilities runs
        r = runner.invoke(app, [*base, "--model", "openai/stub-model", "--limit", "1"])
        assert r.exit_code == 0, r.output


def test_check_options_takes_the_specs(tiny_suite):
    from medresilience.family import family_of
    from medresilience.run.runner import EvalOptions, check_options

    fam = family_of([tiny_suite.manifest.family])
    together = parse_model_spec("together/m,api_key_env=none")
    check_options(fam, EvalOptions(scoring="letter"), [together])
    check_options(fam, EvalOptions(scoring="logprob"))  # no specs: nothing to check
    with pytest.raises(ConfigError, match="provider together takes no logprobs"):
        check_options(fam, EvalOptions(scoring="logprob"), [together])


# ---- prices


def test_prices_from_the_table_the_spec_and_the_config():
    assert all(p.date and p.input >= 0 and p.output >= 0 for p in PRICES)
    s = parse_model_spec("openai/gpt-4o-mini-2024-07-18")  # a dated snapshot of a listed model
    t = known_price("openai", "gpt-4o-mini")
    assert (s.price_input, s.price_output, s.price_source, s.price_date) == (t.input, t.output, "table", t.date)
    assert s.cost(1_000_000, 1_000_000) == pytest.approx(t.input + t.output)
    assert known_price("anthropic", "claude-sonnet-4-5-20250929").model == "claude-sonnet-4-5"
    assert known_price("openai", "gpt-4o-mini-tts") is None and known_price(None, "gpt-4o") is None
    own = parse_model_spec("openai/gpt-4o-mini,price_input=1,price_output=2")
    assert (own.price_input, own.price_output, own.price_source, own.price_date) == (1.0, 2.0, "spec", None)
    none = parse_model_spec("openai/gpt-4o-mini,price_input=none")
    assert none.cost(10, 10) is None and none.price_source is None
    d = SpecDefaults({"concurrency": 3}, {"openai/gpt-4o-mini": (0.5, 0.7, "2026-11-01"), "stub": (1.0, None, None)}, "medres.toml")
    c = parse_model_spec("openai/gpt-4o-mini", d)
    assert (c.price_input, c.price_output, c.price_source, c.price_date, c.concurrency) == (0.5, 0.7, "medres.toml", "2026-11-01", 3)
    c = parse_model_spec("openai/gpt-4o-mini,price_output=9,concurrency=5", d)  # the spec wins
    assert (c.price_input, c.price_output, c.price_source, c.concurrency) == (None, 9.0, "spec", 5)
    assert parse_model_spec("openai:stub,base_url=http://x/v1", d).price_input == 1.0  # by model name
    assert parse_model_spec("embedded", d).concurrency == 2  # a local server keeps its own


def test_library_spec_with_a_provider(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gw/v1")
    s = ModelSpec(model="claude-haiku-4-5", provider="anthropic")
    assert s.base_urls == ["http://gw/v1"] and s.api_key_env == "ANTHROPIC_API_KEY" and s.price_source == "table"


# ---- the config file


def _write_config(d: Path, text: str, name: str = "medres.toml") -> Path:
    p = d / name
    p.write_text(text)
    return p


def test_config_defaults_apply_and_flags_win(tmp_path, tiny_suite, monkeypatch, clean_env):
    _write_config(
        clean_env,
        'models = ["openai/stub-model"]\nconcurrency = 3\nout = "runs/from-config"\n'
        '[prices."openai/stub-model"]\ninput = 1.5\noutput = 2.5\ndate = "2026-11-01"\n',
    )
    with StubServer(policy=oracle_policy) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        r = runner.invoke(app, ["eval", "--suite", str(tiny_suite.path), "--limit", "1"])
        assert r.exit_code == 0, r.output
        m = json.loads((clean_env / "runs" / "from-config" / "run.json").read_text())["models"][0]
        assert (m["label"], m["concurrency"], m["price_input"], m["price_output"], m["price_source"], m["price_date"]) == (
            "stub-model",
            3,
            1.5,
            2.5,
            "medres.toml",
            "2026-11-01",
        )
        assert "$" in r.output  # the priced run reports its cost
        # flags win: --model and --out, and a setting in the spec
        other = tmp_path / "flags"
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(tiny_suite.path),
                "--limit",
                "1",
                "--out",
                str(other),
                "--model",
                "openai/stub-model,label=flagged,concurrency=5,price_input=0.1",
            ],
        )
        assert r.exit_code == 0, r.output
        m = json.loads((other / "run.json").read_text())["models"][0]
        assert (m["label"], m["concurrency"], m["price_input"], m["price_output"], m["price_source"]) == ("flagged", 5, 0.1, None, "spec")
        assert not (clean_env / "runs" / "eval").exists()


def test_pyproject_tool_table_and_precedence(clean_env):
    _write_config(clean_env, '[project]\nname = "x"\n[tool.medres]\nmodels = "openai/gpt-4o"\nconcurrency = 4\n', "pyproject.toml")
    cfg = load_config()
    assert cfg.values.models == ["openai/gpt-4o"] and cfg.where == "pyproject.toml [tool.medres]"
    assert cfg.source("concurrency") == "pyproject.toml [tool.medres]" and cfg.source("out") == "default"
    assert cfg.models(None) == ["openai/gpt-4o"] and cfg.models(["vllm/m"]) == ["vllm/m"]
    assert cfg.out(None, Path("runs/eval")) == Path("runs/eval")
    _write_config(clean_env, 'out = "elsewhere"\n')  # medres.toml comes first
    cfg = load_config()
    assert cfg.where == "medres.toml" and cfg.out(None, Path("runs/eval")) == Path("elsewhere") and cfg.out(Path("x"), Path("y")) == Path("x")
    with pytest.raises(ConfigError, match="no model given"):
        cfg.models(None)
    assert cfg.models(None, ["embedded"]) == ["embedded"]


def test_judge_from_config_reaches_families_that_take_one(clean_env):
    from pydantic import BaseModel

    from medresilience.family import EvaluationSpec, Family, MeasureSpec, ProbeSpec, register, unregister

    class JudgeOptions(BaseModel):
        judge: str = "none"

    measures = MeasureSpec(metrics=lambda df: {}, headline=lambda b: {}, columns=())
    toy = {"title": "toy", "probes": ProbeSpec(), "measures": measures}
    register(Family(name="judged-toy", evaluation=EvaluationSpec(render=lambda *a: [], scorer=lambda *a: None, options=JudgeOptions), **toy))
    register(Family(name="unjudged-toy", evaluation=EvaluationSpec(render=lambda *a: [], scorer=lambda *a: None), **toy))
    try:
        _write_config(clean_env, 'judge = "openai/gpt-4.1"\n')
        cfg = load_config()
        assert cfg.family_options({}, "judged-toy") == {"judge": "openai/gpt-4.1"}
        assert cfg.family_options({"judge": "vllm/j"}, "judged-toy") == {"judge": "vllm/j"}  # -O wins
        assert cfg.family_options({"x": "1"}, "unjudged-toy") == {"x": "1"}  # a family without a judge is left alone
    finally:
        unregister("judged-toy")
        unregister("unjudged-toy")


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        ("medres.toml", "concurency = 4\n", "concurency"),
        ("medres.toml", '[prices."openai/gpt-4o"]\ninptu = 1\n', "prices.openai/gpt-4o.inptu"),
        ("medres.toml", 'concurrency = "many"\n', "concurrency"),
        ("pyproject.toml", "[tool.medres]\nmodel = 'openai/gpt-4o'\n", "tool.medres.model"),
    ],
)
def test_config_typo_names_the_file_and_key(tiny_suite, clean_env, name, text, key):
    _write_config(clean_env, text, name)
    with pytest.raises(InputError) as e:
        load_config()
    assert name in str(e.value) and f"'{key}'" in str(e.value)
    for cmd in (["eval", "--suite", str(tiny_suite.path), "--model", "vllm/m"], ["config"]):
        line = one_error_line(runner.invoke(app, cmd))
        assert name in line and key in line, line
    assert not (clean_env / "runs").exists()


def test_a_pyproject_whose_tool_is_no_table_names_the_key(clean_env):
    # `tool` is read as the table holding [tool.medres]; a value of another kind is bad input
    # named by file and key, not an AttributeError from reading it as a table
    _write_config(clean_env, 'tool = "medres"\n[project]\nname = "x"\n', "pyproject.toml")
    with pytest.raises(InputError) as e:
        load_config()
    assert "pyproject.toml" in str(e.value) and e.value.field == "tool" and "must be a table" in str(e.value)


def test_config_not_toml_names_the_line(clean_env):
    _write_config(clean_env, 'models = ["a"]\nconcurrency = \n')
    line = one_error_line(runner.invoke(app, ["config"]))
    assert "medres.toml:2" in line and "not valid TOML" in line


# ---- the commands


def test_models_command_lists_providers_and_prices():
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 0, r.output
    for p in PROVIDERS.values():
        assert p.name in r.output and p.base_url in r.output and p.base_url_env in r.output
        assert all(k in r.output for k in p.key_envs)
    assert "random_seed" in r.output and "max_completion_tokens" in r.output and "gpt-4o-mini" in r.output and "2026-03-21" in r.output


def test_config_command_shows_values_and_sources(clean_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 0, r.output
    assert "config file: none" in r.output and "default" in r.output
    _write_config(clean_env, 'models = ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "nonsense"]\nconcurrency = 6\n')
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 0, r.output
    out = r.output
    assert "medres.toml" in out and "concurrency" in out and "6" in out and "--out" in out
    assert "OPENAI_API_KEY (set)" in out and "ANTHROPIC_API_KEY (NOT SET)" in out and "cannot read model spec" in out
    assert "table (2026-03-21)" in out and FAKE_KEY not in out
    r = runner.invoke(app, ["config", "--model", "vllm/m"])
    assert r.exit_code == 0 and "http://localhost:8000/v1" in r.output and "gpt-4o-mini" not in r.output.split("Models")[-1]


def test_eval_without_a_model_says_how_to_name_one(tiny_suite):
    line = one_error_line(runner.invoke(app, ["eval", "--suite", str(tiny_suite.path)]))
    assert "--model" in line and "medres.toml" in line


def test_end_to_end_provider_eval_writes_no_secret(tmp_path, tiny_suite, monkeypatch):
    """`--model openai/stub-model` against the stub (OPENAI_BASE_URL) on the tiny suite; the fake
    key's value is in no file of the run directory, report included."""
    with StubServer(policy=oracle_policy) as srv:
        url = srv.base_url
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        out = tmp_path / "run"
        r = runner.invoke(app, ["eval", "--suite", str(tiny_suite.path), "--model", "openai/stub-model", "--out", str(out)])
        assert r.exit_code == 0, r.output
        assert srv.stats.total > 0
    from medresilience.run.results import Results

    assert Results.load(out / "results.json").headline("stub-model")["type1_asr"].n == 3  # the oracle's 3 clean-correct items
    run = json.loads((out / "run.json").read_text())
    assert run["models"][0]["api_key_env"] == "OPENAI_API_KEY" and run["models"][0]["base_urls"] == [url]
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.relative_to(out).as_posix() for p in files}
    assert {"store.sqlite", "run.json", "results.json", "results.md", "report/report.html"} <= names
    for p in files:
        assert FAKE_KEY.encode() not in p.read_bytes(), f"the key leaked into {p}"
    assert FAKE_KEY not in r.output


ALL = EvalOptions(family={"type1": "all"})


MSGS = [{"role": "user", "content": "Question number 1: which option is right?\nA. a\nB. b\nC. c\nD. d"}]


PARAMS = {"temperature": 0.0, "max_tokens": 16}


SECRET = "sk-hardening-SECRET-0123456789abcdef"


async def test_credentials_in_base_url_fail_at_once():
    with StubServer(policy=oracle_policy) as srv:
        url = srv.base_url.replace("http://", "http://user:hunter2@")
        async with OpenAICompatibleModel(stub_spec(url, max_retries=6), backoff_base=0.2) as m:
            with pytest.raises(ModelCallError) as ei:
                await m.complete(MSGS, PARAMS)
        assert srv.stats.total == 0
    e = ei.value
    assert e.attempts == 1 and e.waited_s == 0  # failed at once: no retry, no wait
    assert e.permanent and e.attempts == 1 and "configuration" in str(e) and "hunter2" not in str(e)


def test_a_key_echoed_by_the_endpoint_is_scrubbed_everywhere(tmp_path, tiny_suite, monkeypatch):
    monkeypatch.setenv("MEDRES_HARDEN_KEY", SECRET)
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(seed=4, rate_401=0.3)) as srv:
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(d),
                "--out",
                str(out),
                "-O",
                "type1=all",
                "--model",
                f"openai:stub-model,base_url={srv.base_url},api_key_env=MEDRES_HARDEN_KEY,concurrency=1",
            ],
        )
        assert srv.stats.by_outcome.get("401")
    assert r.exit_code == 1, r.output
    assert "error sample" in r.output and "Incorrect API key provided: [redacted]" in r.output
    assert SECRET not in r.output
    for f in out.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    with Store(out / "store.sqlite") as st:
        errors = [row[0] for row in st.conn.execute("SELECT error FROM calls WHERE status = 'error'")]
    assert errors and all("Incorrect API key provided: [redacted]" in e and SECRET not in e for e in errors)


def test_credentials_in_base_url_are_not_stored(tmp_path, tiny_suite):
    url = "http://user:hunter2@127.0.0.1:9/v1?token=tok-abc123"
    res = evaluate(tiny_suite, [stub_spec(url, max_retries=0)], tmp_path / "run", ALL)
    assert res.stats.ok == 0
    stored = (tmp_path / "run" / "run.json").read_text()
    with Store(tmp_path / "run" / "store.sqlite") as st:
        stored += "".join(row[0] for row in st.conn.execute("SELECT config FROM runs"))
        stored += "".join(row[0] or "" for row in st.conn.execute("SELECT error FROM calls"))
    stored += (tmp_path / "run" / "results.json").read_text()
    assert "hunter2" not in stored and "tok-abc123" not in stored
    assert "127.0.0.1:9/v1" in stored  # the endpoint itself is kept


def test_a_model_spec_public_form_holds_no_credentials():
    """Every stored copy of a spec (run.json, a build's manifest) comes from public(): endpoints
    without user:password@ or query strings."""
    from medresilience.models.spec import parse_model_spec

    spec = parse_model_spec("openai:m,base_url=https://user:hunter2@llm.example.org/v1?token=tok-abc|http://127.0.0.1:8000/v1")
    pub = spec.public()
    assert pub["base_urls"] == ["https://***@llm.example.org/v1?***", "http://127.0.0.1:8000/v1"]
    assert "hunter2" not in str(pub) and "tok-abc" not in str(pub) and spec.base_urls[0].startswith("https://user:hunter2@")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:8000/v1", "127.0.0.1:8000/v1", "file:///tmp/x", "http:///v1"])
def test_a_base_url_that_is_not_http_is_refused_at_parse_time(url):
    with pytest.raises(MedresError) as ei:
        parse_model_spec(f"openai:m,base_url={url}")
    assert "base_url" in str(ei.value) and "http" in str(ei.value)
    parse_model_spec("openai:m,base_url=https://llm.example.org/v1|http://127.0.0.1:8000/v1")
