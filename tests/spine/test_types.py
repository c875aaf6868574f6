"""The type checker over src/ (mypy at default strictness with the pydantic plugin, configured in
pyproject.toml): no error outside the committed baseline (`mypy_baseline.txt` beside this file), and
the baseline only shrinks: an entry that no longer occurs fails too, so a fix takes its line out.

A baseline line is `path: message  [code]` (no line number, so an edit above an error does not move
it); a line may repeat, once per error. `python tests/spine/test_types.py` checks the same from a
shell (CI: .ci/run); `--shrink` drops the entries that no longer occur and never adds one.
mypy keeps its cache in .mypy_cache/ at the root, so a second run reads only the changed modules."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("mypy_baseline.txt")
ERROR = re.compile(r"^(?P<path>src/[^:]+\.py):\d+: error: (?P<message>.*)$")


def mypy_errors() -> Counter[str]:
    """Every error mypy reports over src/, as baseline lines; a run that fails otherwise (a crash, a
    configuration error) raises with its output."""
    try:
        import mypy  # noqa: F401
    except ImportError:
        raise AssertionError("mypy is not installed: install the test extras (scripts/install.sh --test)") from None
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--show-error-codes"], cwd=ROOT, capture_output=True, text=True)
    errors = Counter(f"{m['path']}: {m['message']}" for line in r.stdout.splitlines() if (m := ERROR.match(line)))
    if r.returncode not in (0, 1) or (r.returncode == 1 and not errors):
        raise AssertionError(f"mypy did not run (exit {r.returncode}):\n{r.stdout}{r.stderr}")
    return errors


def baseline() -> Counter[str]:
    if not BASELINE.exists():
        return Counter()
    return Counter(line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#"))


def differences(found: Counter[str], allowed: Counter[str]) -> tuple[list[str], list[str]]:
    """(new: errors beyond the baseline, gone: baseline entries that no longer occur)."""
    return sorted((found - allowed).elements()), sorted((allowed - found).elements())


def test_no_type_error_outside_the_baseline():
    new, gone = differences(mypy_errors(), baseline())
    assert not new, f"{len(new)} mypy error(s) not in {BASELINE.name} (fix them; the baseline never grows):\n" + "\n".join(new)
    assert not gone, f"{len(gone)} baseline entr(ies) no longer occur: run `python tests/spine/test_types.py --shrink`:\n" + "\n".join(gone)


def test_differences_count_each_error():
    # a second error of the same text in a file is new even though its text is in the baseline once
    found = Counter({"src/a.py: x  [arg-type]": 2, "src/b.py: y  [index]": 1})
    new, gone = differences(found, Counter({"src/a.py: x  [arg-type]": 1, "src/c.py: z  [misc]": 1}))
    assert new == ["src/a.py: x  [arg-type]", "src/b.py: y  [index]"]
    assert gone == ["src/c.py: z  [misc]"]


def _main(argv: list[str]) -> int:
    found, allowed = mypy_errors(), baseline()
    new, gone = differences(found, allowed)
    if "--shrink" in argv and gone:
        kept = sorted((allowed & found).elements())
        head = "# mypy errors over src/ that are still allowed (tests/spine/test_types.py); this list only shrinks\n"
        BASELINE.write_text(head + "".join(f"{line}\n" for line in kept), encoding="utf-8")
        print(f"baseline: {len(gone)} entr(ies) dropped, {len(kept)} left")
        gone = []
    for line in new:
        print(f"new: {line}")
    for line in gone:
        print(f"gone (run with --shrink): {line}")
    print(f"mypy: {sum(found.values())} error(s), {sum(allowed.values())} in the baseline, {len(new)} new")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
