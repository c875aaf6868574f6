"""The one registry type (`medresilience.registry.Registry`) and the registries built on it:
a taken name is refused a different value, an unknown name is an error listing the known ones in
each registry's own words."""

from __future__ import annotations

import pytest

from medresilience import mitigations, sources
from medresilience.family import get as get_family
from medresilience.models.providers import PROVIDERS, get_provider
from medresilience.models.spec import ModelSpec
from medresilience.registry import Registry
from medresilience.report import tradeoff
from medresilience.review.rubrics import get_rubric, rubrics
from medresilience.runtime.errors import ConfigError, InputError


def test_register_get_names_values_in_registration_order():
    r: Registry[int] = Registry("number")
    assert r.register("two", 2) == 2
    r.register("one", 1)
    assert r.names() == ["two", "one"] and r.values() == [2, 1] and len(r) == 2
    assert "one" in r and "three" not in r and r.get("one") == 1


def test_a_taken_name_refuses_a_different_value_unless_replaced():
    r: Registry[str] = Registry("colour")
    r.register("sky", "blue")
    r.register("sky", "blue")  # the same value again changes nothing
    with pytest.raises(ValueError, match="a colour named 'sky' is already registered"):
        r.register("sky", "grey")
    assert r.get("sky") == "blue"
    r.register("sky", "grey", replace=True)
    assert r.get("sky") == "grey"


def test_unregister_forgets_a_name_and_ignores_an_unknown_one():
    r: Registry[int] = Registry("number")
    r.register("one", 1)
    r.unregister("one")
    r.unregister("one")
    assert "one" not in r and r.names() == []


def test_an_unknown_name_lists_the_known_ones():
    r: Registry[int] = Registry("number")
    with pytest.raises(KeyError, match=r"unknown number 'x' \(known: none\)"):
        r.get("x")
    r.register("b", 2)
    r.register("a", 1)
    with pytest.raises(KeyError, match=r"unknown number 'x' \(known: b, a\)"):
        r.get("x")
    s: Registry[int] = Registry("number", error=lambda m: ConfigError("--number", m), sort_known=True)
    s.register("b", 2)
    s.register("a", 1)
    with pytest.raises(ConfigError, match=r"unknown number 'x' \(known: a, b\)"):
        s.get("x")


def test_each_registry_keeps_its_error():
    with pytest.raises(KeyError, match=r"unknown family 'nope' \(known: adaptive, misleading, noise, pressure, presupposition"):
        get_family("nope")
    with pytest.raises(ConfigError, match=r"unknown rubric 'nope' \(known: B, A"):
        get_rubric("nope")
    with pytest.raises(ConfigError, match=r"unknown setting 'nope' \(known: none, caution, monitor"):
        mitigations.get("nope")
    with pytest.raises(ValueError, match=r"unknown provider 'nope' \(known: openai, anthropic"):
        ModelSpec(kind="openai", model="m", provider="nope")
    assert get_provider("OpenAI") is PROVIDERS.get("openai") and get_provider("nope") is None


def test_a_setting_name_is_not_taken_twice():
    """A second setting under a taken name was silently put in place of the first."""
    caution = mitigations.get("caution")
    other = mitigations.Setting("caution", "another caution", lambda m: m)
    with pytest.raises(ValueError, match="a setting named 'caution' is already registered"):
        mitigations.register(other)
    assert mitigations.get("caution") is caution
    with pytest.raises(ValueError, match="a setting factory named 'retrieval' is already registered"):
        mitigations.register_factory("retrieval", lambda args, text: caution, "retrieval:OTHER")
    assert any(n.startswith("retrieval:INDEX") for n in mitigations.names())


def test_an_item_format_name_is_not_taken_twice(tmp_path):
    """A second format under a taken name silently replaced the built-in reader."""
    with pytest.raises(ValueError, match="a format named 'medqa' is already registered"):
        sources.register_format("medqa", lambda p: iter(()), {"stem"}, "medqa (another)")
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"stem": "?"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"medqa \(JSON lines with answer_idx\)") as e:
        sources.detect_format(odd)
    assert "medqa (another)" not in str(e.value)


def test_rubrics_and_linked_usage_readers_are_registries():
    assert rubrics().names()[:1] == ["B"] and get_rubric("B") is rubrics().get("B")

    def reader(run):
        return None

    tradeoff.register_linked_usage(reader)
    tradeoff.register_linked_usage(reader)  # once only
    try:
        assert tradeoff._LINKED.values().count(reader) == 1
    finally:
        tradeoff.unregister_linked_usage(reader)
    assert reader not in tradeoff._LINKED.values()
