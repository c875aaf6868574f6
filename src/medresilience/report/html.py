"""One self-contained HTML file: inline CSS, inline SVG figures, no script, no external resource
(no fonts, images, stylesheets or favicons fetched). It opens with the few numbers that matter
most, then one section per stress family that has data, the resilience profile, the statistical
tests and the run facts."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .tables import CONDITION_TITLES, SETTING_TITLES, STRATUM_TITLES, fmt_p, fmt_pct

CSS = """
:root { --ink:#1b1f24; --muted:#5b6470; --line:#d9dee5; --bg:#ffffff; --panel:#f5f7fa; --accent:#0072B2; --warn:#D55E00; }
* { box-sizing: border-box; }
html { font-size: 15px; }
body { margin: 0; color: var(--ink); background: var(--bg);
       font-family: "DejaVu Sans", "Liberation Sans", "Helvetica Neue", Arial, sans-serif; line-height: 1.5; }
main { max-width: 1180px; margin: 0 auto; padding: 0 28px 60px; }
header.top { background: #10324a; color: #fff; padding: 26px 0 20px; margin-bottom: 8px; }
header.top .inner { max-width: 1180px; margin: 0 auto; padding: 0 28px; }
header.top h1 { margin: 0 0 4px; font-size: 1.75rem; letter-spacing: .01em; }
header.top p { margin: 2px 0; color: #d6e4ef; font-size: .95rem; }
nav.toc { position: sticky; top: 0; background: rgba(255,255,255,.96); border-bottom: 1px solid var(--line);
          padding: 8px 0; margin-bottom: 14px; z-index: 2; font-size: .92rem; }
nav.toc a { margin-right: 16px; color: var(--accent); text-decoration: none; white-space: nowrap; }
nav.toc a:hover { text-decoration: underline; }
h2 { font-size: 1.4rem; margin: 34px 0 8px; padding-top: 8px; border-top: 2px solid var(--line); }
section:first-of-type h2 { border-top: none; margin-top: 14px; }
h3 { font-size: 1.1rem; margin: 22px 0 6px; }
p.lead { font-size: 1.05rem; margin: 6px 0 14px; }
p.note, .muted { color: var(--muted); font-size: .9rem; }
.cards { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 12px; margin: 14px 0 10px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .label { font-size: .85rem; color: var(--muted); }
.card .value { font-size: 1.9rem; font-weight: 700; line-height: 1.2; margin: 2px 0; }
.card .sub { font-size: .82rem; color: var(--muted); }
.card.alert .value { color: var(--warn); }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: .86rem; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
.nowrap, td:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td .n { color: var(--muted); font-size: .8rem; }
tr.sig td { background: #fff6ec; }
.scroll { overflow-x: auto; }
figure { margin: 14px 0 22px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: .88rem; margin-top: 4px; }
details { margin: 8px 0 12px; border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; background: #fcfdfe; }
details > summary { cursor: pointer; font-weight: 600; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--panel); padding: 10px; border-radius: 6px; font-size: .82rem; }
code { font-size: .88em; }
.badge { display: inline-block; font-size: .75rem; padding: 1px 7px; border-radius: 10px; background: #e6eef5; color: #10324a; margin-left: 6px; }
.warn { color: var(--warn); }
footer { color: var(--muted); font-size: .85rem; margin-top: 40px; border-top: 1px solid var(--line); padding-top: 10px; }
"""


def esc(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _isnan(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v))


def rate_cell(p: Any, lo: Any, hi: Any, n: Any, stacked: bool = True) -> str:
    """'71.2%' with '[65.4, 76.4] n=250' beneath it (or beside it when not stacked)."""
    if _isnan(p):
        return "—" if _isnan(n) else f'— <span class="n">n={int(n)}</span>'
    s = f"{100 * float(p):.1f}%"
    extra = []
    if not _isnan(lo) and not _isnan(hi):
        extra.append(f"[{100 * float(lo):.1f}, {100 * float(hi):.1f}]")
    if not _isnan(n):
        extra.append(f"n={int(n)}")
    if extra:
        s += ("<br>" if stacked else " ") + f'<span class="n">{" ".join(extra)}</span>'
    return s


def table(rows: Sequence[Sequence[str]], headers: Sequence[str], numeric: Sequence[int] = (), row_classes: Sequence[str] | None = None) -> str:
    """An HTML table from already-escaped cell strings."""
    num = set(numeric)
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th class="num">{h}</th>' if i in num else f"<th>{h}</th>" for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for ri, r in enumerate(rows):
        cls = f' class="{row_classes[ri]}"' if row_classes and row_classes[ri] else ""
        out.append(f"<tr{cls}>" + "".join(f'<td class="num">{c}</td>' if i in num else f"<td>{c}</td>" for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def collapsible(body: str, summary: str, n_rows: int, open_up_to: int = 12) -> str:
    """A table that stays open when short and folds into <details> when long."""
    opened = " open" if n_rows <= open_up_to else ""
    return f"<details{opened}><summary>{esc(summary)} ({n_rows} rows)</summary>{body}</details>"


def figure(svg: str | None, caption: str) -> str:
    if not svg:
        return ""
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


def setting_name(s: str) -> str:
    return SETTING_TITLES.get(s, s)


# ---------------------------------------------------------------------------------- sections


def key_numbers(headline: pd.DataFrame, mean: dict[str, Any]) -> str:
    """The opening: a sentence, cards with the cross-model means, and the headline table."""
    if headline.empty:
        return "<p class='lead'>No scored results in these runs yet.</p>"
    nd = headline[headline["setting"] == "no_defense"]
    base = nd if not nd.empty else headline
    n_models = len(base)
    setting = "no_defense" if not nd.empty else "defense"
    agg = mean.get(setting, {})

    def card(label: str, key: str, alert: bool = False) -> str:
        if n_models == 1:
            r = base.iloc[0]
            if _isnan(r.get(f"{key}_p")):
                return ""
            val = f"{100 * r[f'{key}_p']:.1f}%"
            sub = f"95% CI {100 * r[f'{key}_lo']:.1f}–{100 * r[f'{key}_hi']:.1f}, n={int(r[f'{key}_n'])}"
        else:
            a = agg.get(key)
            if not a:
                return ""
            val = f"{100 * a['mean']:.1f}%"
            sub = f"mean of {a['models']} models, range {100 * a['min']:.1f}–{100 * a['max']:.1f}%"
        return (f'<div class="card{" alert" if alert else ""}"><div class="label">{esc(label)}</div>'
                f'<div class="value">{val}</div><div class="sub">{esc(sub)}</div></div>')

    cards = "".join([
        card("Clean accuracy", "clean_acc"),
        card("Type 1 accuracy (one misleading sentence)", "type1_acc"),
        card("Type 2 accuracy (whole bundle)", "type2_acc"),
        card("Type 1 attack success (ASR)", "type1_asr", True),
        card("Type 1 flips to the target (TASR)", "type1_tasr", True),
        card("Type 2 attack success (ASR)", "type2_asr", True),
    ])
    sentence = _lead_sentence(base, agg, n_models)
    dagg = mean.get("defense", {})
    if setting == "no_defense" and dagg.get("type1_asr") and agg.get("type1_asr"):
        sentence += (f" With the defensive instruction, Type 1 ASR averages <b>{100 * dagg['type1_asr']['mean']:.1f}%</b>"
                     + (f" and Type 2 ASR {100 * dagg['type2_asr']['mean']:.1f}%" if dagg.get("type2_asr") else "")
                     + " (see Defense effect).")
        cards_note = "<p class='note'>Cards: without the defensive instruction.</p>"
    else:
        cards_note = ""
    rows = []
    for r in headline.itertuples(index=False):
        r = r._asdict()
        rows.append([
            f"<b>{esc(r['model'])}</b>", esc(setting_name(r["setting"])),
            "—" if _isnan(r.get("n_items")) else str(int(r["n_items"])),
            *[rate_cell(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"), r.get(f"{k}_n")) + _clustered(r, k)
              for k in ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr")],
            str(r.get("units_errors", 0)), str(r.get("units_invalid", 0)),
        ])
    headers = ["Model", "Setting", "Items", "Clean acc", "Type 1 acc", "Type 2 acc", "Type 1 ASR", "Type 1 TASR",
               "Type 2 ASR", "Errors", "Invalid"]
    return (f'<p class="lead">{sentence}</p><div class="cards">{cards}</div>{cards_note}'
            + table(rows, headers, numeric=range(2, 11))
            + '<p class="note">Rates with 95% Wilson intervals and n; "items:" is the item-clustered bootstrap interval of '
              "an ASR whose items give several pairs. ASR: share of clean-correct (item, probe) "
              "pairs whose answer is no longer correct with the misleading context; TASR: share that moved to the "
              "injected wrong option. Errors (failed calls) are excluded from every rate and counted; invalid "
              "(unreadable) replies count as not correct.</p>")


def _clustered(r: dict[str, Any], key: str) -> str:
    lo, hi = r.get(f"{key}_cluster_lo"), r.get(f"{key}_cluster_hi")
    if _isnan(lo) or _isnan(hi):
        return ""
    return f'<br><span class="n" title="item-clustered bootstrap 95% interval">items: [{100 * lo:.1f}, {100 * hi:.1f}]</span>'


def _lead_sentence(base: pd.DataFrame, agg: dict[str, Any], n_models: int) -> str:
    def one(key: str) -> str:
        r = base.iloc[0]
        return fmt_pct(r.get(f"{key}_p"), r.get(f"{key}_lo"), r.get(f"{key}_hi"), r.get(f"{key}_n"))

    if n_models == 1:
        r = base.iloc[0]
        parts = [f"<b>{esc(r['model'])}</b> answers {esc(one('clean_acc'))} of clean questions correctly."]
        if not _isnan(r.get("type1_asr_p")):
            parts.append(f"One misleading sentence (Type 1) flips <b>{esc(one('type1_asr'))}</b> of its clean-correct answers"
                         + (f", {esc(one('type1_tasr'))} to the injected option." if not _isnan(r.get("type1_tasr_p")) else "."))
        if not _isnan(r.get("type2_asr_p")):
            parts.append(f"The whole misleading bundle (Type 2) flips <b>{esc(one('type2_asr'))}</b>.")
        return " ".join(parts)
    parts = [f"Across <b>{n_models} models</b>"]
    if "clean_acc" in agg:
        a = agg["clean_acc"]
        parts.append(f" clean accuracy averages {100 * a['mean']:.1f}% (range {100 * a['min']:.1f}–{100 * a['max']:.1f}%).")
    else:
        parts.append(".")
    if "type1_asr" in agg:
        a = agg["type1_asr"]
        parts.append(f" One misleading sentence (Type 1) flips <b>{100 * a['mean']:.1f}%</b> of clean-correct answers on "
                     f"average (range {100 * a['min']:.1f}–{100 * a['max']:.1f}%).")
    if "type2_asr" in agg:
        a = agg["type2_asr"]
        parts.append(f" The whole bundle (Type 2) flips <b>{100 * a['mean']:.1f}%</b> "
                     f"(range {100 * a['min']:.1f}–{100 * a['max']:.1f}%).")
    return "".join(parts)


def strata_tables(metrics: pd.DataFrame, tests: pd.DataFrame) -> str:
    """Per stratum kind (source, content type, provenance): one collapsible table of rates and tests."""
    rates = {(r["model"], r["setting"], r["stratum_kind"], r["stratum"], r["condition"], r["metric"]): r
             for r in metrics.to_dict("records")}
    tested = {(r["model"], r["setting"], r["stratum_kind"], r["stratum"], r["condition"]): r for r in tests.to_dict("records")}
    out = []
    for kind in ("source", "content_type", "provenance"):
        m = metrics[metrics["stratum_kind"] == kind]
        if m.empty:
            continue
        keys = m[["model", "setting", "stratum"]].drop_duplicates()
        rows, classes = [], []
        for model, setting, stratum in keys.itertuples(index=False):
            def cell(cond: str, metric: str) -> str:
                r = rates.get((model, setting, kind, stratum, cond, metric))
                return "—" if r is None else rate_cell(r["p"], r["lo"], r["hi"], r["n"])

            tp = {}
            sig = False
            for cond in ("type1", "type2"):
                r = tested.get((model, setting, kind, stratum, cond))
                if r is None:
                    tp[cond] = "—"
                else:
                    sig = sig or bool(r["significant"])
                    tp[cond] = f"{fmt_p(r['p'])} <span class='n'>Holm {fmt_p(r['p_holm'])}</span>"
            rows.append([esc(model), esc(setting_name(setting)), esc(str(stratum).replace("_", " ")),
                         cell("clean", "accuracy"), cell("type1", "accuracy"), cell("type2", "accuracy"),
                         cell("type1", "asr"), cell("type1", "tasr"), cell("type2", "asr"), tp["type1"], tp["type2"]])
            classes.append("sig" if sig else "")
        headers = ["Model", "Setting", STRATUM_TITLES[kind], "Clean acc", "Type 1 acc", "Type 2 acc", "Type 1 ASR",
                   "Type 1 TASR", "Type 2 ASR", "McNemar p (T1)", "McNemar p (T2)"]
        out.append(f"<details><summary>By {esc(STRATUM_TITLES[kind].lower())}: rates and tests ({len(rows)} rows)</summary>"
                   + table(rows, headers, numeric=range(3, 11), row_classes=classes)
                   + "<p class='note'>McNemar: exact test of clean vs stressed correctness on the same pairs; Holm: "
                     f"adjusted across the {esc(STRATUM_TITLES[kind].lower())} strata of one model, setting and condition. "
                     "Highlighted rows: a Holm-adjusted p &lt; 0.05.</p></details>")
    return "".join(out)


def flips_table_html(flips: pd.DataFrame) -> str:
    d = flips[(flips["stratum_kind"] == "overall")]
    if d.empty:
        return ""
    rows = []
    for r in d.itertuples(index=False):
        def share(v: Any, s: Any) -> str:
            if _isnan(v):
                return "—"
            return f"{int(v)}" + ("" if _isnan(s) else f" <span class='n'>({100 * s:.0f}%)</span>")

        rows.append([esc(r.model), esc(setting_name(r.setting)), esc(CONDITION_TITLES[r.condition]), str(r.clean_correct_pairs),
                     str(r.flips), share(r.to_target, r.share_to_target), share(r.elsewhere, r.share_elsewhere),
                     share(r.invalid, r.share_invalid)])
    return collapsible(table(rows, ["Model", "Setting", "Condition", "Clean-correct pairs", "Flips", "To target", "Elsewhere", "Invalid"],
                             numeric=range(3, 8)), "Flips table", len(rows))


def diff_table_html(t: pd.DataFrame, pair_title: str = "Comparison", a_title: str = "A", b_title: str = "B") -> str:
    if t.empty:
        return ""
    rows = []
    for r in t.itertuples(index=False):
        rows.append([
            f"<span class='nowrap'>{esc(r.pair)}</span>",
            esc(f"{CONDITION_TITLES[r.condition]} {'accuracy' if r.metric == 'accuracy' else r.metric.upper()}"),
            rate_cell(r.a_p, r.a_lo, r.a_hi, None, stacked=True), rate_cell(r.b_p, r.b_lo, r.b_hi, None, stacked=True),
            "—" if _isnan(r.diff) else f"<b>{100 * r.diff:+.1f} pp</b>" + ("" if _isnan(r.lo) else f"<br><span class='n'>[{100 * r.lo:+.1f}, {100 * r.hi:+.1f}]</span>"),
            f"{fmt_p(r.p_boot)}<br><span class='n'>Holm {fmt_p(r.p_holm)}</span>",
            f"{fmt_p(r.p_test)}<br><span class='n'>{esc(r.test.replace('_', ' '))}</span>",
            f"{r.n}<br><span class='n'>{r.items} items</span>",
        ])
    return collapsible(table(rows, [esc(pair_title), "Metric", esc(a_title), esc(b_title), f"{esc(b_title)} − {esc(a_title)}",
                                    "Bootstrap p", "Paired test p", "Pairs"], numeric=range(2, 8)),
                       "Differences table", len(rows), open_up_to=24)


def profile_table_html(profile: pd.DataFrame) -> str:
    """One row per model and setting: clean accuracy, resilience per family, and the defense's
    effect on resilience (percentage points, paired bootstrap CI) where both settings ran."""
    if profile.empty:
        return ""
    rates = profile[profile["kind"] == "rate"]
    deltas = profile[profile["kind"] == "difference"]
    dims = list(dict.fromkeys(rates["dimension"]))
    ddims = list(dict.fromkeys(deltas["dimension"]))
    titles = {"clean_accuracy": "Clean accuracy", "resilience_type1": "Resilience, Type 1",
              "resilience_type2": "Resilience, Type 2"}
    rows = []
    for (model, setting), g in rates.groupby(["model", "setting"], sort=False):
        by = {r.dimension: r for r in g.itertuples(index=False)}
        cells = [f"<b>{esc(model)}</b>", esc(setting_name(setting))]
        cells += [rate_cell(by[d].value, by[d].lo, by[d].hi, by[d].n) if d in by else "—" for d in dims]
        if ddims:
            dd = {r.dimension: r for r in deltas[deltas["model"] == model].itertuples(index=False)}
            for d in ddims:
                r = dd.get(d)
                cells.append("—" if r is None or setting != "no_defense" else
                             f"{100 * r.value:+.1f} pp" + ("" if _isnan(r.lo) else f"<br><span class='n'>[{100 * r.lo:+.1f}, {100 * r.hi:+.1f}]</span>"))
        rows.append(cells)
    headers = ["Model", "Setting", *[titles.get(d, d) for d in dims]]
    headers += [f"Defense Δ, {d.rsplit('_', 1)[-1].replace('type', 'Type ')}" for d in ddims]
    return collapsible(table(rows, headers, numeric=range(2, len(headers))), "Profile table", len(rows))


def run_facts(runs: Sequence[Any], redact_url: Callable[[str], str]) -> str:
    out = []
    for run in runs:
        cfg = run.config or {}
        head = f"<h3>Run <code>{esc(run.name)}</code></h3>"
        src = ("recomputed from the store" if run.source == "store" else "read from results.json")
        lines = [f"<p>Directory: <code>{esc(run.path)}</code>. Numbers {esc(src)}. medresilience {esc(cfg.get('medresilience', '?'))}, "
                 f"Python {esc(cfg.get('python', '?'))}.</p>"]
        for n in run.notes:
            lines.append(f"<p class='warn'>{esc(n)}</p>")
        # models
        mrows = []
        for m in cfg.get("models", []):
            urls = ", ".join(redact_url(u) for u in m.get("base_urls") or []) or ("embedded (local)" if m.get("kind") == "embedded" else "—")
            dec = f"temperature={m.get('temperature')}, top_p={m.get('top_p')}, max_tokens={m.get('max_tokens')}, seed={m.get('seed')}"
            if m.get("extra_body"):
                dec += f", extra_body={json.dumps(m.get('extra_body'), sort_keys=True)}"
            price = "—" if m.get("price_input") is None and m.get("price_output") is None else \
                f"${m.get('price_input') or 0}/M in, ${m.get('price_output') or 0}/M out"
            mrows.append([esc(m.get("label")), esc(f"{m.get('kind')}:{m.get('model')}"), esc(urls),
                          esc(m.get("api_key_env") or "—"), esc(dec),
                          esc(f"concurrency={m.get('concurrency')}, rpm={m.get('rpm')}, timeout={m.get('timeout')}s, retries={m.get('max_retries')}"),
                          esc(price)])
        if mrows:
            lines.append(table(mrows, ["Label", "Model", "Endpoints", "API key variable", "Decoding", "Client", "Price"]))
            lines.append("<p class='note'>Secrets are never stored: only the name of the environment variable that "
                         "held the API key. Endpoint credentials and query strings are masked.</p>")
        opts = cfg.get("options")
        if opts:
            lines.append(f"<p>Options: <code>{esc(json.dumps(opts, sort_keys=True))}</code></p>")
        # counts
        res = run.results
        crow = []
        for model, settings in (res.get("models") or {}).items():
            for setting, block in settings.items():
                c = block.get("counts", {})
                crow.append([esc(model), esc(setting_name(setting)), str(c.get("units", "—")), str(c.get("errors", "—")),
                             str(c.get("invalid", "—")), str(c.get("missing", "—"))])
        if crow:
            lines.append("<h4>Units</h4>" + table(crow, ["Model", "Setting", "Units", "Errors", "Invalid", "Missing (not run)"], numeric=range(2, 6)))
        if run.counts:
            c = run.counts
            lines.append(f"<p>Store: {c['calls_ok']} calls ok, {c['calls_error']} errors ({c['calls_error_permanent']} permanent); "
                         f"scores: {c['scores_valid']} valid, {c['scores_invalid']} invalid, {c['scores_unscored']} unscored "
                         "(unscored judgments count as invalid, never as a score).</p>")
            if c.get("error_samples"):
                lines.append("<details><summary>Most frequent errors</summary><pre>" + esc("\n".join(c["error_samples"])) + "</pre></details>")
        usage = res.get("usage") or {}
        if usage:
            urows = [[esc(m), str(u.get("calls")), str(u.get("errors")), f"{int(u.get('prompt_tokens') or 0):,}",
                      f"{int(u.get('completion_tokens') or 0):,}", "—" if u.get("cost") is None else f"${u['cost']:.4f}"]
                     for m, u in usage.items()]
            lines.append("<h4>Tokens and cost</h4>" + table(urows, ["Model", "Calls", "Errors", "Prompt tokens", "Completion tokens", "Cost"], numeric=range(1, 6)))
        if run.last_execution:
            le = run.last_execution
            lines.append(f"<p class='note'>Last execution: {le.get('called', 0)} calls made, {le.get('cached', 0)} reused from the store, "
                         f"{le.get('errors', 0)} errors, {le.get('seconds', 0):.1f}s.</p>")
        prompts = cfg.get("prompts") or {}
        if prompts:
            texts = prompts.get("texts") or {}
            body = "".join(f"<p><b>{esc(k)}</b></p><pre>{esc(v)}</pre>" for k, v in texts.items())
            lines.append(f"<details><summary>Prompts (hash <code>{esc(prompts.get('hash'))}</code>)</summary>{body}</details>")
        suite = cfg.get("suite")
        if suite:
            counts = suite.get("counts") or {}
            lines.append(f"<p>Suite <b>{esc(suite.get('name'))}</b> v{esc(suite.get('version'))} (family {esc(suite.get('family'))}, "
                         f"seed {esc(suite.get('seed'))}): {esc(counts.get('items', '?'))} items, {esc(counts.get('probes', '?'))} probes. "
                         f"Path: <code>{esc(suite.get('path'))}</code></p>")
            lines.append("<details><summary>Suite manifest</summary><pre>" + esc(json.dumps(suite, indent=2, sort_keys=True)) + "</pre></details>")
        out.append(head + "".join(lines))
    return "".join(out)


METHODS = """
<ul>
<li><b>Accuracy</b> (clean, Type 1, Type 2): correct / answered units. Failed calls (errors) are excluded and counted;
unreadable replies are counted as invalid and as not correct.</li>
<li><b>ASR</b> (attack success rate): among (item, probe) pairs whose item is answered correctly clean, the share
answered incorrectly with the misleading context (an unreadable reply counts as a flip and is reported). <b>TASR</b>:
the share that moved to the injected wrong option (Type 1). Resilience = 1 - ASR.</li>
<li><b>Intervals</b>: 95% Wilson score intervals on every rate. Several Type 1 probes share one question, so ASR also
carries an item-clustered bootstrap interval (2,000 resamples, seeded) in the tables.</li>
<li><b>Tests</b>: exact McNemar test of clean vs stressed correctness on the same pairs, per model and stratum; Holm's
step-down correction across the strata of one kind (sources, content types or provenances) of one model, setting and
condition. Paired differences between settings or runs: item-clustered paired bootstrap (percentile interval, two-sided
bootstrap p) with an exact or clustered McNemar test beside it, Holm-corrected across the metrics of one comparison.</li>
</ul>
"""


def page(title: str, subtitle: Sequence[str], sections: Sequence[tuple[str, str, str]], footer: str) -> str:
    """sections: (id, heading, body html). The first section is shown without a rule above it."""
    toc = "".join(f'<a href="#{esc(sid)}">{esc(h)}</a>' for sid, h, _ in sections)
    body = "".join(f'<section id="{esc(sid)}"><h2>{esc(h)}</h2>{b}</section>' for sid, h, b in sections)
    subs = "".join(f"<p>{s}</p>" for s in subtitle)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><link rel=\"icon\" href=\"data:,\"><style>{CSS}</style></head><body>"
        f"<header class=\"top\"><div class=\"inner\"><h1>{esc(title)}</h1>{subs}</div></header>"
        f"<main><nav class=\"toc\">{toc}</nav>{body}<footer>{footer}</footer></main></body></html>\n"
    )
