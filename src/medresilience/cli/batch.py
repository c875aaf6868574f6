"""`--batch openai|anthropic|files` of `medres eval`: the run's calls go through a provider's batch
API (or a batch file for your own engine) instead of live calls. The command does not wait for a
batch: it submits, prints each batch's status and exits with WAITING (3) while any call waits for
one; run the same command again to collect what is done and go on (dependent calls go out as the
next batch: judges, extraction, second turns, and each step of an agent or a team, all units'
step together); it exits as a live run does once every call is answered, saying how many batches
the run took. `--dry-run` prints calls, tokens and cost live vs batch and sends nothing. What
cannot go through a batch is refused before any call, in one line naming the setting and why
(`loop_refusal`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer

from .kit import console, err_console, fail

if TYPE_CHECKING:
    from ..calls import CallRequest
    from ..models.spec import ModelSpec
    from ..run.resolved import ResolvedRun

#: the batch options every command that calls models through calls.run_calls takes (one definition)
BatchOpt = Annotated[
    Optional[str],
    typer.Option(
        "--batch",
        help="send the calls as a provider batch at the batch price: openai, anthropic, or files (a batch file for your own engine); "
        "exits 3 while a batch is in progress: rerun to collect. Agent and team settings send each step as a batch once the one "
        "before is back; with anthropic the agent needs protocol=text (no tools in message batches)",
    ),
]
BatchResultsOpt = Annotated[Optional[Path], typer.Option("--batch-results", help="with --batch files: the output file your engine wrote (OpenAI batch format)")]
BatchFallbackOpt = Annotated[
    str, typer.Option("--batch-fallback", help="requests a batch did not answer (expired, cancelled, failed): batch (the next batch) or live")
]

#: the exit code of a run that waits for a batch (not 0: not done; not 1 or 2: nothing failed)
WAITING = 3
#: what `--batch-fallback` takes: requests a batch did not answer go in the next batch, or live now
FALLBACKS = ("batch", "live")


@dataclass(frozen=True)
class BatchRequest:
    """What the batch options ask: the provider, the output file of a `files` batch, the fallback
    of requests a batch did not answer, and whether this is a dry run."""

    provider: str
    results: Path | None = None
    fallback: str = "batch"
    dry_run: bool = False


def batch_request(batch: str | None, results: Path | None, fallback: str, dry_run: bool) -> BatchRequest | None:
    """The batch options checked together (a ConfigError names the flag)."""
    from ..batch import PROVIDERS
    from ..runtime.errors import ConfigError

    if batch is None:
        for flag, given in (("--batch-results", results is not None), ("--dry-run", dry_run), ("--batch-fallback", fallback != "batch")):
            if given:
                raise ConfigError(flag, "goes with --batch openai|anthropic|files")
        return None
    if batch not in PROVIDERS:
        raise ConfigError("--batch", f"{batch!r} is not one of {', '.join(PROVIDERS)}")
    if fallback not in FALLBACKS:
        raise ConfigError("--batch-fallback", f"{fallback!r} is not one of {', '.join(FALLBACKS)}")
    return BatchRequest(batch, results, fallback, dry_run)


@contextlib.contextmanager
def batch_mode_of(request: BatchRequest | None, out: Path) -> Iterator[None]:
    """Every call of the run inside goes through the batch the request asks for (none: live)."""
    if request is None:
        yield
        return
    from ..batch import BatchExecutor
    from ..calls import batch_mode

    executor = BatchExecutor(request.provider, out / "batches", request.results, request.fallback == "live")
    with batch_mode(executor):
        yield


@contextlib.contextmanager
def batch_command(request: BatchRequest | None, workdir: Path) -> Iterator[None]:
    """A command's model calls inside go through the batch the options ask for (its request files
    under `workdir/batches`); a step that needs replies still in a batch stops the command with
    the batches' status and exit WAITING (3)."""
    from ..calls import BatchWaiting

    try:
        with batch_mode_of(request, workdir):
            yield
    except BatchWaiting as w:
        if request is None:  # cannot happen: only a batch makes calls wait
            raise
        print_waiting(w, request)


def refuse_batch(batch: str | None, why: str) -> None:
    """A command whose calls are sequential by nature (each prompt needs the last reply) takes no
    batch: say so in one line, exit 2."""
    if batch is not None:
        fail(f"--batch: {why}; run it live (without --batch)", 2)


def loop_refusal(run: Any, provider: str) -> str | None:
    """Why the run's settings cannot go through `provider`'s batches (one line naming the setting),
    or None. Each step of an answer loop goes out as a batch once the one before is back (the
    agent's searches are made here between its steps and stored, so they need no live model);
    what has no batch form is refused: the agent's tools protocol (function calling) with
    Anthropic's message batches, whose requests carry no tools here."""
    if provider != "anthropic":
        return None
    from ..mitigations import AgentConfig

    for setting in run.settings:
        if isinstance(setting.agent, AgentConfig):
            tools = [s.label for s in run.specs if setting.agent.protocol_for(s) == "tools"]
            if tools:
                return (
                    f"--setting {setting.name}: the agent's tools protocol (function calling, for {', '.join(tools)}) does not go through "
                    "Anthropic's message batches; add protocol=text to the setting, or use --batch openai"
                )
    return None


def provider_refusal(run: ResolvedRun, provider: str) -> str | None:
    """Why a model the run calls cannot go through `provider`'s batches (one line naming it), or
    None: a model of a hosted provider (`models.providers`) other than the batch's has no batch
    there (an Anthropic checker's calls cannot go in an OpenAI batch). Every model the run calls is
    looked at: the answering models, a setting's models and the family loop's (an attacker, a
    checker). A model at a base URL of your own (no named provider), a local server and the
    embedded model are not refused; `files` takes every model (your engine answers them)."""
    if provider == "files":
        return None
    from ..models.providers import get_provider

    loop = run.family.evaluation.loop
    called = [*run.specs, *run.setting_models, *(loop.models(run.family_options) if loop is not None else ())]
    for spec in called:
        hosted = get_provider(spec.provider) if spec.provider else None
        if hosted is not None and not hosted.local and hosted.name != provider:
            return (
                f"the model {spec.label} is {hosted.title}'s ({spec.provider}/{spec.model}), whose calls do not go through "
                f"{provider}'s batches; run it live (without --batch), or give every model the run calls one provider's batch"
            )
    return None


def batch_totals(out: Path) -> str | None:
    """How many batches a finished batch run took and the requests they held (a request sent
    again counts in each batch it was in); None when the store recorded none."""
    from ..store import Store

    db = out / "store.sqlite"
    if not db.exists():
        return None
    with contextlib.closing(Store.read_only(db)) as store:
        batches, requests = store.batch_totals()
    if not batches:
        return None
    return f"batches: the run took {batches} batch{'es' if batches != 1 else ''} holding {requests} requests"


def waiting_summarise(summarise: Callable[..., Any]) -> Callable[..., Any]:
    """`summarise` that stops a run still waiting for a batch (Waiting) before any result is computed."""

    def wrapped(store, run, config, stats=None):
        from ..calls import BatchWaiting

        if stats is not None and stats.batch_waiting:
            raise BatchWaiting(stats)
        return summarise(store, run, config, stats)

    return wrapped


def print_waiting(w: Any, request: BatchRequest) -> NoReturn:
    """Each batch's status, what was sent again, and how to go on; then exit WAITING."""
    s = w.stats
    for line in s.batch_lines:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"waiting for a batch: {s.batch_waiting} calls submitted or in progress, {s.ok} results stored this time, {s.errors} errors; "
        "run the same command again to collect what is done (nothing is sent or paid twice)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if request.provider == "files":
        err_console.print(
            "run each request file through your engine, e.g. python -m vllm.entrypoints.openai.run_batch -i FILE.jsonl -o OUT.jsonl --model MODEL "
            "(or scripts/ray_batch.py), then rerun with --batch-results OUT.jsonl",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    raise typer.Exit(WAITING)


def cost_line(usage: Mapping[str, Any]) -> str | None:
    """The run's cost live vs batch in one line (every model's replies): what they cost at the
    price each was made at, with how many came through a batch and how many live, and what every
    reply would have cost live and as a batch. None when no reply was priced or batched."""
    if not any(u.cost is not None or u.batch_calls for u in usage.values()):
        return None

    def total(field: str) -> str:
        vals = [getattr(u, field) for u in usage.values() if u.cost is not None]
        if not vals:
            return "no price"
        return "no batch rate known" if None in vals else f"${sum(vals):.4f}"

    batch = sum(u.batch_calls for u in usage.values())
    live = sum(u.live_calls or 0 for u in usage.values())
    return f"cost: {total('cost')} as made ({batch} replies through a batch at the batch rate, {live} live); all live {total('cost_live')}, all as a batch {total('cost_batch')}"


def print_batch_lines(stats: Any) -> None:
    """The batches a finished run collected from (one line each)."""
    for line in getattr(stats, "batch_lines", []):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def dry_run(run: Any, out: Path, provider: str) -> None:
    """Calls, tokens and cost live vs batch of what the run has left, before anything is sent."""
    from ..calls import CallRequest
    from ..run.runner import plan_run

    planned = plan_run(run)
    requests: dict[str, CallRequest] = {}
    looped: dict[str, set[str]] = {}  # setting -> the keys of its units answered through a loop's steps
    family_looped: dict[str, set[str]] = {}  # setting -> the keys of its units answered through the family's own loop
    agents = {s.name: s.agent for s in run.settings}
    for p in planned:
        if p.loop is not None:
            # a unit whose loop is not its setting's is answered through its family's loop (evaluation.loop)
            (looped if p.loop is agents.get(p.unit.setting) else family_looped).setdefault(p.unit.setting, set()).add(p.unit.key)
        elif p.follow is None:
            requests.setdefault(p.unit.key, CallRequest(p.unit.model, p.unit.key, p.messages, p.params))
    later = "judges, extraction, second turns, agent and team steps" + (", the rounds of the family's loop" if family_looped else "")
    print_estimate(requests, run.specs, out / "store.sqlite", provider, later, looped, family_looped)


def print_estimate(
    requests: Mapping[str, CallRequest],
    specs: Iterable[ModelSpec],
    db: Path,
    provider: str,
    later: str,
    looped: Mapping[str, set[str]] | None = None,
    family_looped: Mapping[str, set[str]] | None = None,
) -> None:
    """Calls, tokens and cost live vs batch of the requests (key -> CallRequest) the store `db`
    does not hold yet, one line per model; `later`: the calls that depend on replies, not counted;
    `looped`: setting -> the keys of its units answered through a loop's steps (an agent's or a
    team's), `family_looped` through the family's own loop (both counted as units only)."""
    looped, family_looped = dict(looped or {}), dict(family_looped or {})
    from ..batch import estimate
    from ..store import Store

    if db.exists():
        with contextlib.closing(Store.read_only(db)) as store:
            done = store.finished_keys({*requests, *(k for m in (looped, family_looped) for keys in m.values() for k in keys)})
        requests = {k: r for k, r in requests.items() if k not in done}
        looped = {name: keys - done for name, keys in looped.items()}
        family_looped = {name: keys - done for name, keys in family_looped.items()}
    lines = estimate(requests.values(), specs, provider)
    for e in lines:
        console.print(e.line(), highlight=False, markup=False, soft_wrap=True)
    for name, keys in looped.items():
        if keys:
            console.print(
                f"--setting {name}: {len(keys)} units answer through steps (an agent's or a team's), each step a batch once the one "
                "before is back; their calls depend on the replies and are not counted here",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    for name, keys in family_looped.items():
        if keys:
            console.print(
                f"--setting {name}: {len(keys)} units answer through the suite family's own loop, each of its rounds a batch once the "
                "one before is back; its calls that depend on the replies are not counted here",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    if not lines and not any(looped.values()) and not any(family_looped.values()):
        console.print("nothing left to send: every planned call is stored", highlight=False, markup=False)
    console.print(f"dry run: nothing was sent; calls that depend on replies ({later}) are not counted", highlight=False, markup=False, soft_wrap=True)
