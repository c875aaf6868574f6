"""results.json's blocks have declared shapes: each family's block is its `Family.measures.results_block`
model, the spine's blocks (reading, audit, stopping, means, last execution) the models in
`results`. A run's results are checked against them when built, written and loaded, the file keeps
its format (the blocks stay the JSON the metrics wrote), and a block out of shape is refused naming
its model, setting and field. The stub server stands in for a model (the boundary we do not own)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import TypeAdapter

from conftest import TESTS, oracle_policy
from medresilience import calls
from medresilience.family import families, get
from medresilience.models.spec import parse_model_spec
from medresilience.report.rundir import family_blocks, load_run
from medresilience.run.evaluation import evaluate, write_results
from medresilience.run.results import Results, ResultsBlock, UndeclaredBlock, headline_rates, typed_blocks
from medresilience.run.runner import EvalOptions
from medresilience.runtime.counters import RunStats
from medresilience.runtime.errors import InputError
from medresilience.testing.stub import StubServer


@pytest.fixture
def run_dir(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=8")
        evaluate(tiny_suite, [spec], tmp_path / "run", EvalOptions(family={"type1": "all"}))
    return tmp_path / "run"


def _load_edited(run_dir, edit) -> None:
    data = json.loads((run_dir / "results.json").read_text())
    edit(data)
    (run_dir / "results.json").write_text(json.dumps(data))
    Results.load(run_dir / "results.json")


def test_every_builtin_family_declares_its_results_block():
    shapes = {f.name: f.measures.results_block for f in families()}
    assert shapes and all(isinstance(s, type) and issubclass(s, ResultsBlock) for s in shapes.values()), shapes
    assert len(set(shapes.values())) == len(shapes)  # each its own


def test_a_runs_blocks_load_as_their_models_and_the_file_keeps_its_format(run_dir):
    text = (run_dir / "results.json").read_text()
    res = Results.load(run_dir / "results.json")
    typed = res.typed_block("stub-model")
    assert isinstance(typed, get(res.family).measures.results_block)
    overall = typed.overall  # type: ignore[attr-defined]
    assert (overall.clean_acc.k, overall.clean_acc.n) == (3, 4) and (overall.type1.asr.k, overall.type1.asr.n) == (4, 9)
    assert overall.type1.asr.interval == "item-clustered bootstrap" and overall.type2.tasr is None
    # written back from the models byte for byte: the same keys in the same order, none added by a default
    assert res.json_text() == text
    assert "tasr" not in json.loads(text)["models"]["stub-model"]["none"]["overall"]["type2"]
    assert res.reading["stub-model"]["none"]["replies"] == 20


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda d: d["models"]["stub-model"]["none"]["overall"].update(type3_acc={"k": 1}), "models.stub-model.none.overall.type3_acc"),
        (lambda d: d["models"]["stub-model"]["none"]["counts"].update(units="many"), "models.stub-model.none.counts.units"),
        (lambda d: d["models"]["stub-model"]["none"]["by_source"]["tiny"]["clean_acc"].pop("k"), "models.stub-model.none.by_source.tiny.clean_acc.k"),
        (lambda d: d["reading"]["stub-model"]["none"].pop("replies"), "reading.stub-model.none.replies"),
        (lambda d: d["mean_across_models"]["none"]["clean_acc"].update(mean="high"), "mean_across_models.none.clean_acc.mean"),
        (lambda d: d["last_execution"].update(retried=2), "last_execution.retried"),
        (lambda d: d["last_execution"].update(cost="free"), "last_execution.cost"),
    ],
)
def test_a_block_out_of_shape_is_refused_on_load_naming_its_field(run_dir, edit, where):
    with pytest.raises(InputError) as e:
        _load_edited(run_dir, edit)
    assert where in str(e.value) and "results.json" in str(e.value)


def test_the_blocks_are_written_from_their_models(run_dir):
    """results.json's blocks are the family's models dumped: a value is written as the model holds
    it (an int where a float is declared is written as the float), a field the metrics left out
    stays out (no null from a default), and each object's keys keep the order the metrics wrote
    them in, which is not the models' (a rate's own fields come before the interval fields its
    model inherits)."""
    from medresilience.families.misleading.block import AttackSuccess

    data = json.loads((run_dir / "results.json").read_text())
    block = data["models"]["stub-model"]["none"]
    block["overall"]["clean_acc"]["lo"] = 0
    written = json.loads(Results.model_validate(data).json_text())["models"]["stub-model"]["none"]
    assert written["overall"]["clean_acc"]["lo"] == 0.0 and isinstance(written["overall"]["clean_acc"]["lo"], float)
    asr = written["overall"]["type1"]["asr"]
    assert list(asr) == list(block["overall"]["type1"]["asr"]) and list(asr) != [k for k in AttackSuccess.model_fields if k in asr]
    assert "tasr" not in written["overall"]["type2"] and "clusters" not in written["overall"]["type2"]["mcnemar"]


#: results.json files written before the blocks were written from their models: one per built-in
#: family, from the project's own test runs (none has the batch counters of last_execution)
OLD_RESULTS = sorted((TESTS / "data" / "results_json").glob("*.json"))
assert [p.stem for p in OLD_RESULTS] == ["misleading", "noise", "pressure", "presupposition"]


@pytest.mark.parametrize("path", OLD_RESULTS, ids=lambda p: p.stem)
def test_an_older_results_json_loads_typed_and_is_written_back_byte_for_byte(path):
    text = path.read_text(encoding="utf-8")
    res = Results.load(path)
    assert res.family == path.stem
    typed = res.typed_models()
    shape = get(res.family).measures.results_block
    assert typed and all(isinstance(b, shape) for per in typed.values() for b in per.values())
    assert res.typed_models() is typed  # kept from the load, not validated again
    assert res.json_text() == text


def test_the_last_execution_is_the_call_paths_counters_declared_once(run_dir):
    """results.json's last_execution is `RunStats` itself: written as its fields in their order, read
    back as a RunStats, a key that is no counter refused; a counter added to RunStats is in the
    file and in its check with no second declaration to keep in step."""
    data = json.loads((run_dir / "results.json").read_text())
    assert list(data["last_execution"]) == [f.name for f in dataclasses.fields(RunStats)]
    counters = TypeAdapter(RunStats).validate_python(data["last_execution"])
    assert isinstance(counters, RunStats) and dataclasses.asdict(counters) == data["last_execution"]
    assert counters.planned_units == 20 and counters.called + counters.cached == counters.unique_calls
    # the call path imports the same class it counts into
    assert calls.RunStats is RunStats


def test_results_out_of_shape_are_never_written(run_dir):
    before = (run_dir / "results.json").read_text()
    res = Results.load(run_dir / "results.json")
    block = json.loads(json.dumps(res.models["stub-model"]["none"]))
    block["overall"]["clean_acc"]["invalid"] = "none"
    bad = res.model_copy(update={"models": {"stub-model": {"none": block}}})  # as a copy is made: unchecked until written
    with pytest.raises(ValueError, match=r"models\.stub-model\.none\.overall\.clean_acc\.invalid"):
        write_results(run_dir, bad)
    assert (run_dir / "results.json").read_text() == before


class _OtherBlock(ResultsBlock):
    """A block shape no built-in family declares."""


def test_the_reports_view_of_a_run_reads_its_blocks_typed_as_the_file_holds_them(run_dir):
    res = Results.load(run_dir / "results.json")
    shape = get(res.family).measures.results_block
    recomputed = load_run(run_dir)  # from the store and the suite
    saved = load_run(run_dir, recompute=False)  # from results.json alone
    assert recomputed.source == "store" and saved.source == "results.json"
    for run in (recomputed, saved):
        assert run.blocks == res.typed_models() and isinstance(run.blocks["stub-model"]["none"], shape)
        assert run.readings["stub-model"]["none"].replies == 20
    [(name, model, setting, block)] = family_blocks([recomputed], shape)
    assert (name, model, setting) == (run_dir.name, "stub-model", "none") and block == res.typed_block("stub-model")
    # a family's report reads its own blocks as its own type: another shape is refused, naming the run
    with pytest.raises(TypeError, match=rf"run {run_dir.name}: the block of stub-model under none is a {shape.__name__}, not a _OtherBlock"):
        family_blocks([recomputed], _OtherBlock)
    # the typed headline gives the family's headline rates of the block as written
    raw = get(res.family).measures.headline(res.models["stub-model"]["none"]["overall"])
    typed = res.headline("stub-model")
    assert raw and typed.keys() == raw.keys()
    for key, rate in raw.items():
        got = typed[key]
        assert (got is None) == (rate is None)
        if rate is not None and got is not None:
            assert (got.k, got.n, got.p, got.lo, got.hi) == (rate["k"], rate["n"], rate["p"], rate["lo"], rate["hi"])


def test_the_report_refuses_a_saved_block_out_of_shape_naming_its_file_and_field(run_dir):
    data = json.loads((run_dir / "results.json").read_text())
    data["models"]["stub-model"]["none"]["counts"]["units"] = "many"
    (run_dir / "results.json").write_text(json.dumps(data))
    run = load_run(run_dir, recompute=False)  # read as JSON; its blocks are typed when first read
    with pytest.raises(InputError, match=r"results\.json: models\.stub-model\.none\.counts\.units: ") as e:
        run.blocks  # noqa: B018
    assert e.value.path == str(run_dir / "results.json")


def test_a_family_that_declares_no_block_reads_its_blocks_as_written():
    block = {"overall": {"acc": {"k": 3, "n": 4, "p": 0.75, "lo": 0.3, "hi": 0.95}}, "counts": {"units": 4}}
    [[typed]] = [list(v.values()) for v in typed_blocks("no-such-family", {"m": {"none": block}}).values()]
    assert isinstance(typed, UndeclaredBlock) and typed.model_dump() == block
    [rate] = headline_rates(lambda overall: {"acc": overall.get("acc")}, typed).values()
    assert rate is not None and (rate.k, rate.n, rate.p) == (3, 4, 0.75)
