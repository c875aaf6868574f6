"""`medres models` (the provider table and known prices) and `medres config` (the settings in
effect and where each came from). Thin: read the library's tables, print."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    """Add the model and config commands to the main app."""
    from .kit import console, user_errors

    @app.command()
    @user_errors
    def models() -> None:
        """The providers a model can be named by (PROVIDER/MODEL), with their URL, key variable and quirks."""
        from ..models.providers import PRICES, PROVIDERS
        from .tables import fitted

        headers = ("provider", "name", "URL", "URL override variable", "key variable", "quirks", "agent protocol", "JSON schema")
        rows = [
            (
                p.name,
                p.title,
                p.base_url,
                p.base_url_env,
                " or ".join(p.key_envs) if p.key_envs else "none (local)",
                "; ".join(p.quirks()) or "—",
                p.agent_protocol,
                p.structured_answers,
            )
            for p in PROVIDERS.values()
        ]
        width = console.width
        console.print(fitted("Providers: --model PROVIDER/MODEL[,KEY=VALUE...]", headers, rows, width, label=True))
        prices = [(pr.provider, pr.model, f"{pr.input:.2f}", f"{pr.output:.2f}", pr.date) for pr in PRICES]
        title = "Known prices (USD per 1M tokens; used when a spec and medres.toml set none)"
        console.print(fitted(title, ("provider", "model", "input", "output", "listed"), prices, width))
        console.print(
            'Any other OpenAI-compatible endpoint: --model "openai:MODEL,base_url=URL[,api_key_env=VAR]"; local models: embedded, embedded:smollm2 '
            "(llama.cpp: JSON schema yes). JSON schema: whether -O answer_format=schema (and a structured judge) sends response_format "
            "json_schema; a model asked for it is probed once per run directory, and one that rejects or ignores it is asked in the "
            "prompt format, as the run says.",
            highlight=False,
        )

    @app.command("config")
    @user_errors
    def config_(
        model: Annotated[Optional[list[str]], typer.Option("--model", "-m", help="show what these specs resolve to (default: the file's models)")] = None,
    ) -> None:
        """The settings in effect (medres.toml or [tool.medres] in pyproject.toml), where each came
        from, and what each model resolves to."""
        from ..models.spec import parse_model_spec
        from ..report.rundir import redact_url
        from ..runtime.errors import MedresError
        from .config import OVERRIDDEN_BY, load_config
        from .tables import fitted

        cfg = load_config()
        console.print(
            f"config file: {f'{cfg.where} ({cfg.path})' if cfg.path else 'none (medres.toml or [tool.medres] in pyproject.toml, in the working directory)'}",
            highlight=False,
            markup=False,
        )
        v = cfg.values
        shown = {
            "models": ", ".join(v.models) or "— (eval needs --model; run uses embedded)",
            "judge": v.judge or "—",
            "concurrency": str(v.concurrency) if v.concurrency is not None else "— (each spec's, 16 by default)",
            "out": str(v.out) if v.out is not None else "— (runs/eval for eval, runs/sample for run)",
            "prices": "; ".join(f"{k}: {p.input}/{p.output}" + (f" ({p.date})" if p.date else "") for k, p in v.prices.items())
            or "— (the provider table's, see medres models)",
        }
        rows = [(key, value, cfg.source(key), OVERRIDDEN_BY[key]) for key, value in shown.items()]
        console.print(fitted("Settings in effect", ("key", "value", "from", "a command line overrides it with"), rows, console.width))

        names = list(model or []) or list(v.models)
        if not names:
            return
        models_rows = []
        for name in names:
            try:
                s = parse_model_spec(name, cfg.spec_defaults())
            except MedresError as e:
                models_rows.append((name, f"error: {e}", "", "", "", "", "", ""))
                continue
            key = "none" if s.api_key_env is None else f"{s.api_key_env} ({'set' if os.environ.get(s.api_key_env) else 'NOT SET'})"
            price = "—" if s.price_input is None and s.price_output is None else f"{s.price_input}/{s.price_output}"
            when = (s.price_source or "—") + (f" ({s.price_date})" if s.price_date else "")
            urls = "embedded (local)" if s.kind == "embedded" else " | ".join(redact_url(u) for u in s.base_urls)
            models_rows.append((name, s.label, s.provider or "—", urls, key, str(s.concurrency), price, when))
        headers = ("spec", "label", "provider", "URL", "key variable", "concurrency", "price in/out", "price from")
        console.print(fitted("Models", headers, models_rows, console.width))
