"""`medres build adaptive ...` (thin: parse, call the library, print).

medres build adaptive --from ITEMS_OR_SUITE --out SUITE_DIR [--seed S] [--name NAME] [--limit N]
medres build transfer RUN_DIR --out SUITE_DIR [--setting S] [--accepted] [--name NAME] [--suite ADAPTIVE_SUITE]
medres build transfer-rate REPLAY_RUN_DIR [--json PATH]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ...cli.kit import console
from ...cli.kit import user_errors as _user_errors

build_app = typer.Typer(no_args_is_help=True, help="Build adaptive-attack suites.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


@build_app.command("adaptive")
@_user_errors
def adaptive(
    source: Annotated[Path, typer.Option("--from", help="an items file (any source format) or a suite directory whose items to attack")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write")],
    seed: Annotated[int, typer.Option("--seed", help="suite seed (each item's target option, kind, content type and provenance)")] = 0,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="at most this many items, in file order")] = None,
) -> None:
    """Build an adaptive suite: one attack per item (its target and kind drawn from the seed); no model is called."""
    from .construct import build_adaptive

    suite = build_adaptive(source, out, seed, name, limit)
    skipped = sum((suite.manifest.model_extra or {}).get("built_from", {}).get("skipped", {}).values())
    console.print(f"wrote {out}: {len(suite.items)} items, {len(suite.probes)} probes ({skipped} rows skipped)")


@build_app.command("transfer")
@_user_errors
def transfer(
    run_dir: Annotated[Path, typer.Argument(help="an adaptive run directory (the --out of `medres eval --attacker ...`)")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write (a misleading-context suite of Type 1 probes)")],
    setting: Annotated[str, typer.Option("--setting", help="the attacks found under this setting of the run")] = "none",
    accepted: Annotated[bool, typer.Option("--accepted", help="also every accepted candidate that did not flip the attacked model")] = False,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    suite: Annotated[Optional[Path], typer.Option("--suite", help="the run's adaptive suite, when it is no longer where run.json says")] = None,
) -> None:
    """Replay an adaptive run's successful attacks on other models: a static suite of each attack's final stress (no model is called)."""
    from .transfer import WHY_NOT, build_transfer

    built = build_transfer(run_dir, out, setting=setting, accepted=accepted, name=name, suite_dir=suite)
    made = (built.manifest.model_extra or {}).get("built_from", {})
    console.print(
        f"wrote {out}: {made['attacks_written']} of {made['attacks_found']} successful attacks as {len(built.probes)} Type 1 probes on {len(built.items)} items",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for kind, n in sorted(made["skipped"].items()):
        console.print(f"left out {n} {kind} attacks: {WHY_NOT.get(kind, 'not a kind a static suite replays')}", highlight=False, markup=False, soft_wrap=True)


@build_app.command("transfer-rate")
@_user_errors
def transfer_rate(
    replay_dir: Annotated[Path, typer.Argument(help="a run of a transfer suite (`medres eval --suite TRANSFER_SUITE ...`)")],
    json_out: Annotated[Optional[Path], typer.Option("--json", help="also write the rates as JSON here")] = None,
) -> None:
    """The share of the transferred attacks that also flip each model of a replay run, with its 95% Wilson interval and n (no model is called)."""
    import json

    from ...runtime.fileio import atomic_write
    from .transfer import transfer_rates

    rates = transfer_rates(replay_dir)
    console.print(f"attacks found in {rates['source_run']}", highlight=False, markup=False, soft_wrap=True)
    for r in rates["rows"]:
        rate = r["rate"]
        shown = "n/a" if rate["p"] is None else f"{rate['p']:.1%} [{rate['lo']:.1%}, {rate['hi']:.1%}]"
        own = " (its own attacks: reproduction, not transfer)" if r["same_model"] else ""
        console.print(
            f"{r['model']} ({r['setting']}) on attacks against {r['attacked_model']}{own}: flipped {r['flipped']}/{r['held'] + r['flipped'] + r['unread']} = {shown}; "
            f"to target {r['to_target']}, unread {r['unread']}, not right at clean {r['not_right_at_clean']}, not run {r['not_run']}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if json_out is not None:
        with atomic_write(json_out) as fh:
            fh.write(json.dumps(rates, indent=2) + "\n")
