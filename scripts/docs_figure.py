"""The front page's picture: the headline figure of the report a first run writes.

Runs `medres run --limit 12` (the bundled sample suite, as the first set-up command does) against
the stub OpenAI-compatible server of medresilience.testing (a stand-in model that answers by a hash
of the prompt, so the figure is the same on every machine and no model is downloaded or run), then
copies the report's first figure (clean vs Type 1 vs Type 2 accuracy) to docs/img/first-run.svg.

    .venv/bin/python scripts/docs_figure.py            # writes docs/img/first-run.svg
    .venv/bin/python scripts/docs_figure.py --out X    # elsewhere (the docs test compares the two)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURE = "fig-accuracy"  # the report's first figure: accuracy clean vs Type 1 vs Type 2


def headline_svg(report_html: str) -> str:
    """The report's headline figure as a standalone SVG file (the report inlines it)."""
    m = re.search(rf'<svg\b[^>]*id="{FIGURE}".*?</svg>', report_html, re.S)
    if m is None:
        raise SystemExit(f"the report has no figure {FIGURE!r}")
    return '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + m.group(0) + "\n"


def first_run_figure(limit: int = 12) -> str:
    """Run the sample suite on the stub model in a temporary folder and return the figure."""
    from medresilience.testing.stub import StubServer

    with tempfile.TemporaryDirectory() as tmp, StubServer(model="stub-model") as srv:
        spec = f"openai:stub-model,label=stub-model,base_url={srv.base_url}"
        cmd = [sys.executable, "-m", "medresilience.cli", "run", "--model", spec, "--limit", str(limit), "--out", "runs/sample"]
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True, text=True)
        return headline_svg((Path(tmp) / "runs/sample/report/report.html").read_text(encoding="utf-8"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs/img/first-run.svg")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(first_run_figure(), encoding="utf-8")
    print(args.out)


if __name__ == "__main__":
    main()
