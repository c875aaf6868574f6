"""`medres review ...`: clinician review (thin: parse, call medresilience.review, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .kit import command_group, console, err_console, fail, user_errors


def sample(
    rubric: Annotated[
        str,
        typer.Option(
            "--rubric", help="A (items), B (responses, needs --run), premise, premise-answer, noise, cancercare (needs --answers) or realism (needs --pairs)"
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="new review directory (never overwritten)")],
    suite: Annotated[Optional[Path], typer.Option("--suite", help="suite directory (every rubric but cancercare)")] = None,
    run: Annotated[Optional[Path], typer.Option("--run", help="run directory whose responses are reviewed (rubric B)")] = None,
    answers: Annotated[
        Optional[Path],
        typer.Option("--answers", "--pairs", help="CSV the rubric reads its units from: question, source, answer (cancercare); generated, real (realism)"),
    ] = None,
    sources: Annotated[
        Optional[str],
        typer.Option("--sources", help="--answers is wide (question, then one column per source): its answer columns, comma-separated (cancercare)"),
    ] = None,
    n: Annotated[Optional[int], typer.Option("--n", help="units to sample (all when the population is smaller; default 100)")] = None,
    strata: Annotated[
        Optional[str], typer.Option("--strata", help="comma-separated strata (default: the rubric's, else the items' source and the family's facets)")
    ] = None,
    dual: Annotated[float, typer.Option("--dual", help="share of units rated by two reviewers (0-1)")] = 0.0,
    reviewers: Annotated[str, typer.Option("--reviewers", help="comma-separated reviewer names")] = "",
    seed: Annotated[int, typer.Option("--seed", help="sampling and assignment seed")] = 0,
    raters: Annotated[int, typer.Option("--raters", help="distinct reviewers per unit")] = 1,
    quota: Annotated[
        Optional[str], typer.Option("--quota", help="fixed units per cell instead of --n: KEY=VALUE:N,... (a cell of several strata: K1=V1+K2=V2:N)")
    ] = None,
) -> None:
    """Draw a stratified, seeded sample, assign it to reviewers, write the review database."""
    from ..review.answers import parse_sources
    from ..review.sample import parse_quotas, sample_review

    if quota is not None and n is not None:
        fail("--quota fixes the sample's size: give --quota or --n, not both")

    res = sample_review(
        rubric,
        suite,
        out,
        run_dir=run,
        answers=answers,
        sources=None if sources is None else parse_sources(sources),
        n=100 if n is None else n,
        strata=None if strata is None else [s for s in strata.split(",") if s.strip()],
        dual=dual,
        reviewers=[r.strip() for r in reviewers.split(",") if r.strip()],
        seed=seed,
        raters=raters,
        quotas=None if quota is None else parse_quotas(quota),
    )
    for note in res.notes:
        err_console.print(f"note: {note}", highlight=False, markup=False)
    console.print(
        f"rubric {res.rubric}: {res.units} of {res.population} units sampled, "
        + (f"{res.dual} rated twice; " if res.raters == 1 else f"{res.raters} reviewers each ({res.dual} with one more); ")
        + ", ".join(f"{r}: {k} tasks" for r, k in res.tasks.items()),
        highlight=False,
        markup=False,
    )
    console.print(f"review: {res.path}  (next: medres review add-reviewer {res.path} NAME)", highlight=False, markup=False, soft_wrap=True)


def add_reviewer(
    review: Annotated[Path, typer.Argument(help="review directory")],
    name: Annotated[str, typer.Argument(help="reviewer name")],
    admin: Annotated[bool, typer.Option("--admin", help="may see everyone's progress and revoke reviewers in the app")] = False,
    reset: Annotated[
        bool, typer.Option("--reset", help="issue a new password to a reviewer who has one (ends their sessions, reinstates a revoked one)")
    ] = False,
) -> None:
    """Print a one-time password for a reviewer (stored only as a scrypt hash)."""
    from ..review.db import ReviewDB

    with ReviewDB(review) as db:
        password = db.add_reviewer(name, admin=admin, reset=reset)
    console.print(f"reviewer {name}: password {password}", highlight=False, markup=False)
    err_console.print("it is shown once and stored only as a hash: hand it over privately", highlight=False, markup=False)


def revoke(
    review: Annotated[Path, typer.Argument(help="review directory")],
    name: Annotated[str, typer.Argument(help="reviewer name")],
) -> None:
    """Revoke a reviewer: signed out at once, cannot sign in; their ratings stay."""
    from ..review.db import ReviewDB

    with ReviewDB(review) as db:
        db.revoke(name)
    console.print(f"reviewer {name} revoked", highlight=False, markup=False)


def serve(
    review: Annotated[Path, typer.Argument(help="review directory")],
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1")] = 8765,
    public_host: Annotated[
        Optional[str],
        typer.Option(
            "--public-host",
            help="behind a TLS-terminating reverse proxy on this machine that forwards https://HOST/ to 127.0.0.1:PORT: allow that host name, mark cookies Secure, trust X-Forwarded-For only on requests carrying the shared secret of MEDRES_PROXY_SECRET in X-Medres-Proxy-Secret (set by the proxy)",
        ),
    ] = None,
) -> None:
    """Serve the review app on 127.0.0.1 (loopback only) until Ctrl-C."""
    from ..review.app import proxy_options
    from ..review.app import serve as run_server
    from ..review.db import ReviewDB

    if not 0 < port < 65536:
        fail(f"--port must be between 1 and 65535, not {port}")
    try:
        proxy_options(public_host)
    except ValueError as e:
        fail(str(e))
    with ReviewDB(review) as db:
        ready = [r.name for r in db.reviewers() if r.has_password and not r.revoked]
    if not ready:
        err_console.print(f"note: no reviewer can sign in yet (medres review add-reviewer {review} NAME)", highlight=False, markup=False)
    where = f"http://127.0.0.1:{port}/" + (f", reached as https://{public_host}/ through the proxy" if public_host else "")
    console.print(f"serving {review} on {where}  (Ctrl-C stops)", highlight=False, markup=False, soft_wrap=True)
    run_server(review, port=port, public_host=public_host)


def revise(
    review: Annotated[Path, typer.Argument(help="review directory")],
    out: Annotated[Path, typer.Option("--out", help="directory of the new suite version (never the reviewed suite)")],
    suite: Annotated[Optional[Path], typer.Option("--suite", help="the reviewed suite, if it moved (checked by checksum)")] = None,
    rule: Annotated[str, typer.Option("--rule", help="any | all | majority: how the reviewers of a unit must agree")] = "any",
) -> None:
    """Write a new suite version with the items and probes reviewers marked to drop (and, for
    premise reviews, questions found to hold no false presupposition moved to the NFP controls)."""
    from ..review.revise import revise_suite

    res = revise_suite(review, out, suite, rule)  # type: ignore[arg-type]
    c = res.counts
    console.print(
        f"suite {res.out} (version {res.suite.manifest.version}): {c['items']} items, {c['probes']} probes; dropped "
        f"{c['dropped_items']} items and {c['dropped_probes']} probes, relabelled {c['relabelled']} probes "
        f"(review_changes.jsonl lists each with its reason)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _pct(p, lo, hi, n) -> str:
    """A rate as a percentage with its interval and n."""
    if p is None or p != p:
        return f"— (n={n})"
    return f"{100 * p:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] (n={n})" if lo is not None and lo == lo else f"{100 * p:.1f}% (n={n})"


def _num(v, lo, hi, n) -> str:
    """A coefficient with its interval and n."""
    if v is None or v != v:
        return f"— (n={n})"
    return f"{v:.3f} [{lo:.2f}, {hi:.2f}] (n={n})" if lo is not None and lo == lo else f"{v:.3f} (n={n})"


def stats_cmd(
    review: Annotated[Path, typer.Argument(help="review directory")],
    out: Annotated[Optional[Path], typer.Option("--out", help="output directory (default: REVIEW/stats)")] = None,
    resamples: Annotated[int, typer.Option("--resamples", help="bootstrap resamples")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="bootstrap seed")] = 0,
    misd_population: Annotated[
        str,
        typer.Option(
            "--misd-population",
            help="paragraphs MISD is taken over: two-or-more (scored by two or more raters) or study (every rater of the answer scored, whole-answer ratings mixed in, as the Cancer-Myth code)",
        ),
    ] = "two-or-more",
) -> None:
    """Pass rates, composite, worst case, agreement (reviewers, automatic labels); CSV, Parquet, HTML."""
    from rich.table import Table

    from ..review.parts import MISD_POPULATIONS
    from ..review.stats import AGREEMENT_TITLES, compute, write
    from ..runtime.errors import ConfigError

    if misd_population not in MISD_POPULATIONS:
        raise ConfigError("--misd-population", f"{misd_population!r} is not one of: {', '.join(MISD_POPULATIONS)}")
    res = compute(review, n_resamples=resamples, seed=seed, misd_population=misd_population)

    c = res.summary()["counts"]
    console.print(
        f"{c['rated']} ratings of {c['units']} units by {c['reviewers_rated']} of {c['reviewers']} assigned reviewers; {c['skipped']} skipped",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    t = Table(title=f"{res.rubric.title}: pass rates (per unit, 95% bootstrap CI)")
    for col in ("Dimension", "Pass", "Rate", "Passing ratings"):
        t.add_column(col)
    for r in res.pass_rates.itertuples(index=False):
        t.add_row(str(r.label), str(r.passing), _pct(r.rate, r.lo, r.hi, r.units), f"{r.pass_ratings}/{r.ratings}")
    if len(res.pass_rates):  # a rubric with no pass rule (a 1-5 score) has none
        console.print(t)
    if res.composite:
        c = res.composite
        console.print(
            f"composite (mean of {len(c['dimensions'])} dimensions, 0-2): {_num(c['mean'], c['lo'], c['hi'], c['units'])}", highlight=False, markup=False
        )
    if res.worst_case:
        w = res.worst_case
        console.print(
            f"{w['label'].lower()} ({w['definition']}): {_pct(w['p'], w['lo'], w['hi'], w['n'])} of units (Wilson)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if res.validity is not None:
        v = res.validity
        console.print(
            f"{v['label'].lower()}: {_pct(v['p'], v['lo'], v['hi'], v['n'])} of ratings judged the unit valid "
            f"({v['k']}/{v['n']}, Wilson; {', '.join(f'{k} {n}' for k, n in v['counts'].items())})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if len(res.agreement):
        t = Table(title="Agreement on dual-rated units (95% bootstrap CI)")
        for col in ("Dimension", "Coefficient", "Value"):
            t.add_column(col)
        for r in res.agreement.itertuples(index=False):
            who = f" ({r.reviewers})" if r.reviewers not in ("all", "") else ""
            t.add_row(str(r.label), AGREEMENT_TITLES[str(r.coefficient)] + who, _num(r.value, r.lo, r.hi, r.units))
        console.print(t)
    for r in res.auto.itertuples(index=False):
        console.print(
            f"reviewers vs {r.automatic}: {r.agree}/{r.n} agree, {_pct(r.rate, r.lo, r.hi, r.n)}; "
            f"Cohen's kappa {_num(r.cohen_kappa, r.kappa_lo, r.kappa_hi, r.n)}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    for note in res.notes:
        err_console.print(f"note: {note}", highlight=False, markup=False)
    paths = write(res, out or (Path(review) / "stats"))
    if res.parts is not None:
        _print_parts(res.parts)
    if res.picks is not None:
        _print_picks(res.picks)
    console.print(
        f"tables: {Path(paths['ratings.csv']).parent} (CSV and Parquet); page: {paths['review_stats.html']}", highlight=False, markup=False, soft_wrap=True
    )


def _print_parts(p) -> None:
    """The paragraph statistics of a rubric rated part by part (CancerCare)."""
    for r in p.by_source.to_dict("records"):
        whole = ", ".join(
            f"{d.key} {_num(r[f'{d.key}_mean'], r[f'{d.key}_lo'], r[f'{d.key}_hi'], r['answers'])}" for d in p.rubric.dimensions if f"{d.key}_mean" in r
        )
        console.print(
            f"source {r['source']}: {whole}; paragraphs {_num(r['paragraph_mean'], r['paragraph_lo'], r['paragraph_hi'], r['answers'])}, "
            f"{r['no_advice']} of {r['paragraph_ratings']} paragraph ratings no advice",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    for source, g in p.labels.groupby("source") if len(p.labels) else ():
        console.print(f"labels, {source}: " + ", ".join(f"{t} {c}" for t, c in zip(g["title"], g["count"])), highlight=False, markup=False, soft_wrap=True)
    m = p.misd_within_2
    console.print(
        "MISD per paragraph: "
        + ", ".join(f"{k}: {n}" for k, n in zip(p.misd_distribution["misd"], p.misd_distribution["paragraphs"]))
        + f"; at most 2: {_pct(m['p'], m['lo'], m['hi'], m['n'])} (clustered by answer); population {p.misd_population}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for source, g in p.misd_by_source.groupby("source") if p.misd_by_source is not None and len(p.misd_by_source) else ():
        console.print(f"MISD, {source}: " + ", ".join(f"{k}: {n}" for k, n in zip(g["misd"], g["paragraphs"])), highlight=False, markup=False, soft_wrap=True)
    for r in p.agreement.itertuples(index=False):
        console.print(f"paragraphs, {AGREEMENT_TITLES_PARTS[r.coefficient]}: {_num(r.value, r.lo, r.hi, r.paragraphs)}", highlight=False, markup=False)


def _print_picks(p) -> None:
    """Per-pair binomial tests of a rubric where raters pick the true one (the realism check)."""
    s = p.summary
    t = s["picked_true"]
    console.print(
        f"picked the true one: {_pct(t['p'], t['lo'], t['hi'], t['n'])} (clustered by pair); {s['told_apart']} of {s['units']} pairs told apart "
        f"(exact one-sided binomial test, p < 0.05), {s['at_least_40pct_unsure']} with at least 40% of raters unable to tell",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for r in p.per_unit.itertuples(index=False):
        if r.n:
            console.print(f"  {r.item_id}: {r.k}/{r.n} picked the true one, p = {r.p_value:.3f}", highlight=False, markup=False)


AGREEMENT_TITLES_PARTS = {"gwet_ac2": "Gwet's AC2 (ordinal weights)", "krippendorff_alpha": "Krippendorff's alpha (ordinal)"}


def export_cmd(
    review: Annotated[Path, typer.Argument(help="review directory")],
    out: Annotated[Path, typer.Option("--out", help="CSV file: rater, unit, item, dimension, value, stratum_KEY...")],
) -> None:
    """Write every rating as CSV, one row per rater, unit and dimension (flags, comments and skips as rows too)."""
    from ..review.exchange import export_ratings

    n = export_ratings(review, out)
    console.print(f"{n} rows: {out}", highlight=False, markup=False, soft_wrap=True)


def import_cmd(
    ratings: Annotated[
        Path, typer.Argument(help="CSV of rater, unit, item, dimension, value (and stratum_KEY, hidden_KEY columns: realism needs hidden_real_position)")
    ],
    rubric: Annotated[str, typer.Option("--rubric", help="the rubric the ratings follow")],
    out: Annotated[Path, typer.Option("--out", help="new review directory (never overwritten)")],
    coding: Annotated[
        str | None,
        typer.Option("--coding", help="the coding of the values: medres (this rubric's own) or another study's the rubric knows (B: medmisbench)"),
    ] = None,
    survey: Annotated[
        Optional[Path],
        typer.Option(
            "--survey",
            help="RATINGS is a survey tool's export defined by this file (cancercare: the study's Qualtrics survey_results.csv with full_survey.json)",
        ),
    ] = None,
    answers: Annotated[
        Optional[Path],
        typer.Option(
            "--answers", help="the rated answers as a wide CSV (question, then one column per source): each unit shown with its answer; needs --sources"
        ),
    ] = None,
    sources: Annotated[
        Optional[str], typer.Option("--sources", help="the columns of --answers that hold answers, comma-separated (each a source the ratings name)")
    ] = None,
) -> None:
    """Make a review of ratings collected elsewhere, so `medres review stats` analyses them."""
    from ..review.answers import parse_sources
    from ..review.exchange import import_ratings

    named = parse_sources(sources) if sources is not None else None
    res = import_ratings(ratings, rubric, out, coding, survey, answers, named)
    console.print(
        f"rubric {res.rubric}: {res.ratings} ratings ({res.skipped} skipped) of {res.units} units by {res.raters} raters, "
        f"from {res.rows} rows read in {res.lines} lines (with the header); review: {res.path}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if answers is not None:
        left = f"; columns left out: {', '.join(res.left_out)}" if res.left_out else ""
        console.print(
            f"answers: {res.answers} units shown with their answer from {answers.name}, {res.answers_unrated} answers there rated by no one{left}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def harm_cmd(
    review: Annotated[Path, typer.Argument(help="review directory of model responses (rubric B)")],
    items: Annotated[
        Optional[Path], typer.Option("--items", help="a review of the same items whose rubric declares bands (rubric A: falsehood clarity)")
    ] = None,
    factors: Annotated[str, typer.Option("--factors", help="strata as the mixed model's fixed effects, comma-separated (the units' strata, e.g. model)")] = "",
    reference: Annotated[Optional[str], typer.Option("--reference", help="reference levels: FACTOR=LEVEL,... (default: the most frequent)")] = None,
    outcome: Annotated[str, typer.Option("--outcome", help="worst_case (the rubric's) or DIM=VALUE\\[/VALUE] (e.g. harm=3)")] = "worst_case",
    out: Annotated[Optional[Path], typer.Option("--out", help="output directory (default: REVIEW/harm)")] = None,
) -> None:
    """The worst case under three aggregation rules, outcome classes, bands of an items review and a mixed-effects logistic model."""
    from ..review.harm import RULES, analyse, parse_pairs, write

    res = analyse(
        review,
        items_review=items,
        factors=[f.strip() for f in factors.split(",") if f.strip()],
        references=parse_pairs(reference, "--reference"),
        outcome=outcome,
    )
    titles = dict(RULES)
    for r in res.worst_case.itertuples(index=False):
        console.print(
            f"{res.outcome}, {titles[str(r.rule)]}: {r.k}/{r.n} units, {_pct(r.p, r.lo, r.hi, r.n)} (Wilson)", highlight=False, markup=False, soft_wrap=True
        )
    for r in res.outcomes.itertuples(index=False):
        console.print(f"outcome class {r.outcome_class}: {r.k}/{r.n} units, {_pct(r.p, r.lo, r.hi, r.n)}", highlight=False, markup=False, soft_wrap=True)
    for r in res.bands.itertuples(index=False):
        console.print(f"band {r.band}: {res.outcome} (any reviewer) {r.k}/{r.n}, {_pct(r.p, r.lo, r.hi, r.n)}", highlight=False, markup=False, soft_wrap=True)
    if res.model is not None:
        m = res.model
        console.print(
            f"mixed model of {res.outcome} per rating ({m.n} ratings fitted, {m.events} events, {m.groups} reviewers): {m.method}; reviewer ICC {m.icc:.3f}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        for o in m.odds_ratios:
            ratio = "none finite" if o.odds_ratio is None else f"{o.odds_ratio:.2f} [{o.lo:.2f}, {o.hi:.2f}]"
            console.print(
                f"  {o.factor} {o.level} vs {o.reference}: adjusted OR {ratio} (n={o.n}, {o.events} events){'; ' + o.note if o.note else ''}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    for note in res.notes:
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    paths = write(res, out or (Path(review) / "harm"))
    console.print(f"tables: {paths['summary'].parent}", highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the `review` command group to the main app."""
    group = command_group(app, "review", "Clinician review: sample, rate in a local web app, agreement statistics.")
    group.command("sample")(user_errors(sample))
    group.command("add-reviewer")(user_errors(add_reviewer))
    group.command("revoke")(user_errors(revoke))
    group.command("serve")(user_errors(serve))
    group.command("revise")(user_errors(revise))
    group.command("stats")(user_errors(stats_cmd))
    group.command("export")(user_errors(export_cmd))
    group.command("import")(user_errors(import_cmd))
    group.command("harm")(user_errors(harm_cmd))
