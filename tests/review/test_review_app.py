"""The clinician-review app: sampling and blinding, and each security and reliability promise of
issue 12, tested with FastAPI's TestClient and with a real uvicorn server on 127.0.0.1 started and
stopped by the test (kill -9 between submissions, two reviewers submitting at once).

Suites carry hostile text (`<script>`, `onerror=`, `</textarea>`) in questions, options and
context sentences, and the stub model answers with the same, so every page here shows it."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import make_tiny_suite, oracle_policy, review_serve, stub_spec
from medresilience.models.spec import parse_model_spec
from medresilience.review import ReviewDB, ReviewError, sample_review
from medresilience.review.app import SESSION_COOKIE, create_app
from medresilience.review.auth import RateLimiter, SessionCodec, verify_password
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

KEY_VAR = "MEDRES_TEST_REVIEW_KEY"
REVIEWERS = ("alice", "bob", "carol")
SCRIPT = "<script>alert('q')</script>"
ONERROR = "<img src=x onerror=alert(1)>"
TEXTAREA = "</textarea><script>alert(2)</script>"
RESPONSE_XSS = "</textarea><script>alert(3)</script><img src=y onerror=alert(4)>"
MODEL_LABELS = ("model-a", "model-b", "stub-a", "stub-b")


# --------------------------------------------------------------------------- data


def hostile_suite(directory: Path, copies: int = 8) -> Path:
    """The tiny misleading suite (conftest) with hostile text in every field a reviewer sees."""
    base = make_tiny_suite(n_copies=copies)
    items = []
    for it in base.items.values():
        opts = dict(it.options)
        opts["B"] = f"{opts['B']} {ONERROR}"
        items.append(it.model_copy(update={"question": f"{it.question} {SCRIPT}", "options": opts}))
    probes = []
    for p in base.probes:
        ctx = tuple(s.model_copy(update={"text": f"{s.text} {TEXTAREA}"}) for s in p.context)
        probes.append(p.model_copy(update={"context": ctx}))
    Suite(base.manifest, items, probes).save(directory)
    Suite.load(directory)  # the probes still fit their items
    return directory


def hostile_policy(messages, request):
    """The oracle answer, followed by hostile markup."""
    return f"{oracle_policy(messages, request)}\nReasoning: {RESPONSE_XSS}"


def make_run(root: Path, suite_dir: Path) -> Path:
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions
    from medresilience.testing.stub import StubServer

    suite = Suite.load(suite_dir)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_VAR, "sk-test-review")
        with StubServer(policy=hostile_policy) as srv:
            specs = [
                parse_model_spec(f"openai:stub-a,label=model-a,base_url={srv.base_url},concurrency=8,api_key_env={KEY_VAR}"),
                parse_model_spec(f"openai:stub-b,label=model-b,base_url={srv.base_url},concurrency=8,api_key_env={KEY_VAR}"),
            ]
            evaluate(suite, specs, root / "run", EvalOptions(family={"type1": "all"}))
    return root / "run"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("review-data")
    suite = hostile_suite(root / "suite")
    return {"suite": suite, "run": make_run(root, suite)}


def new_review(
    data, tmp: Path, rubric: str = "A", *, admin: str | None = "carol", n: int = 100, dual: float = 0.5, name: str = "review"
) -> tuple[Path, dict[str, str]]:
    out = tmp / name
    sample_review(
        rubric,
        data["suite"],
        out,
        run_dir=data["run"] if rubric == "B" else None,
        n=n,
        dual=dual,
        reviewers=list(REVIEWERS),
        seed=11,
        strata=["source", "content_type", "provenance"],
    )
    with ReviewDB(out) as db:
        pw = {r: db.add_reviewer(r, admin=(r == admin)) for r in REVIEWERS}
    return out, pw


@pytest.fixture
def review(data, tmp_path):
    return new_review(data, tmp_path)


# --------------------------------------------------------------------------- client helpers


def client(path: Path, **kw) -> TestClient:
    return TestClient(create_app(path, **kw), base_url="http://127.0.0.1", follow_redirects=False)


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, "no CSRF field in the page"
    return m.group(1)


def sign_in(c: TestClient, name: str, password: str) -> httpx.Response:
    token = csrf_of(c.get("/login").text)
    return c.post("/login", data={"name": name, "password": password, "csrf": token})


def signed_in(path: Path, pw: dict[str, str], name: str, **kw) -> TestClient:
    c = client(path, **kw)
    r = sign_in(c, name, pw[name])
    assert r.status_code == 303 and r.headers["location"] == "/", r.text
    return c


def task_ids(path: Path, reviewer: str) -> list[int]:
    with ReviewDB(path) as db:
        return [t.task_id for t in db.tasks_for(reviewer)]


def stored(path: Path) -> dict[int, tuple]:
    con = sqlite3.connect(path / "review.sqlite")
    try:
        return {r[0]: r[1:] for r in con.execute("SELECT task_id, status, vals, flags, comment, revision FROM ratings")}
    finally:
        con.close()


def full_rating(rubric_key: str = "A") -> dict[str, str]:
    from medresilience.review.rubrics import get_rubric

    return {f"dim_{d.key}": d.values[-1] for d in get_rubric(rubric_key).dimensions}


def rate(c: TestClient, task_id: int, action: str = "submit", rubric: str = "A", **extra) -> httpx.Response:
    page = c.get(f"/tasks/{task_id}")
    assert page.status_code == 200, page.text
    form = {"csrf": csrf_of(page.text), "action": action, **(full_rating(rubric) if action == "submit" else {}), **extra}
    return c.post(f"/tasks/{task_id}", data=form)


# --------------------------------------------------------------------------- sampling and blinding


def _rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path / "review.sqlite")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_sample_is_stratified_seeded_dual_and_balanced(data, tmp_path):
    a, _ = new_review(data, tmp_path, n=24, dual=0.7, admin=None, name="a")
    b, _ = new_review(data, tmp_path, n=24, dual=0.7, admin=None, name="b")
    units_a = _rows(a, "SELECT unit_id, strata FROM units ORDER BY ord")
    assert units_a == _rows(b, "SELECT unit_id, strata FROM units ORDER BY ord")  # seeded: the same sample twice
    assert _rows(a, "SELECT unit_id, reviewer, slot, position FROM tasks ORDER BY task_id") == _rows(
        b, "SELECT unit_id, reviewer, slot, position FROM tasks ORDER BY task_id"
    )
    assert len(units_a) == 24
    meta = json.loads(_rows(a, "SELECT value FROM meta WHERE key = 'allocation'")[0][0])
    population = sum(s["population"] for s in meta)
    for s in meta:  # proportional allocation, within one unit of the exact share
        assert abs(s["sampled"] - 24 * s["population"] / population) < 1, s
    per_unit = _rows(a, "SELECT unit_id, COUNT(*), COUNT(DISTINCT reviewer) FROM tasks GROUP BY unit_id")
    dual = [u for u, n, d in per_unit if n == 2]
    assert len(dual) == round(0.7 * 24) and all(n == d for _, n, d in per_unit)  # two different reviewers
    loads = [n for _, n in _rows(a, "SELECT reviewer, COUNT(*) FROM tasks GROUP BY reviewer")]
    assert max(loads) - min(loads) <= 1
    other = tmp_path / "c"
    sample_review("A", data["suite"], other, n=24, dual=0.7, reviewers=list(REVIEWERS), seed=12)
    assert _rows(other, "SELECT unit_id FROM units ORDER BY ord") != [(u,) for u, _ in units_a]


def test_sample_refuses_bad_requests(data, tmp_path):
    review_dir, _ = new_review(data, tmp_path, n=5, admin=None)
    with pytest.raises(ReviewError, match="already exists"):
        sample_review("A", data["suite"], review_dir, reviewers=["x"])
    with pytest.raises(ReviewError, match="needs at least two reviewers"):
        sample_review("A", data["suite"], tmp_path / "x", reviewers=["solo"], dual=0.5)
    with pytest.raises(ReviewError, match="--run"):
        sample_review("B", data["suite"], tmp_path / "y", reviewers=["a"])
    with pytest.raises(ReviewError, match="do not have"):
        sample_review("A", data["suite"], tmp_path / "z", reviewers=["a"], strata=["colour"])
    with pytest.raises(ReviewError, match="noise suites"):
        sample_review("noise", data["suite"], tmp_path / "w", reviewers=["a"])
    with pytest.raises(ReviewError, match="reviewer name"):
        sample_review("A", data["suite"], tmp_path / "v", reviewers=["<b>"])


def test_rubric_b_blinds_model_identity_and_automatic_labels(data, tmp_path):
    path, pw = new_review(data, tmp_path, "B", n=20)
    hidden = _rows(path, "SELECT display, hidden FROM units")
    assert {json.loads(h)["model"] for _, h in hidden} == {"model-a", "model-b"}  # kept for the analysis ...
    for display, h in hidden:
        hid = json.loads(h)
        assert hid["auto_correct"] in ("correct", "incorrect")
        assert not any(label in display for label in MODEL_LABELS)  # ... never in what is shown
        assert "auto_" not in display and hid["key"] not in display
    c = signed_in(path, pw, "alice")
    for tid in task_ids(path, "alice"):
        html = c.get(f"/tasks/{tid}").text
        assert "The model&#39;s response" in html and "The prompt, as the item presents it" in html
        assert not any(label in html for label in MODEL_LABELS)
        assert "auto_correct" not in html and "valid" not in html.lower().replace("validity", "")


# --------------------------------------------------------------------------- sessions on every route

ROUTES = [
    ("GET", "/"),
    ("GET", "/next"),
    ("GET", "/rubric"),
    ("GET", "/tasks/{tid}"),
    ("GET", "/admin"),
    ("POST", "/logout"),
    ("POST", "/tasks/{tid}"),
    ("POST", "/admin/revoke"),
]


def test_the_tested_routes_are_all_the_routes(review):
    app = create_app(review[0])
    served = {(m, r.path.replace("{task_id}", "{tid}")) for r in app.routes if hasattr(r, "methods") for m in r.methods - {"HEAD"}}
    assert served == set(ROUTES) | {("GET", "/login"), ("POST", "/login")}


@pytest.mark.parametrize("method,route", ROUTES)
def test_every_route_but_sign_in_requires_a_session(review, method, route):
    path, _ = review
    tid = task_ids(path, "alice")[0]
    before = stored(path)
    forged = SessionCodec("not-the-review-secret").issue("alice", 1)[0]
    for cookies in ({}, {SESSION_COOKIE: "garbage"}, {SESSION_COOKIE: forged}):
        c = client(path)
        c.cookies.update(cookies)
        form = {"csrf": "x", "action": "submit", "name": "bob", **full_rating()}
        r = c.get(route.format(tid=tid)) if method == "GET" else c.post(route.format(tid=tid), data=form)
        assert r.status_code == 303 and r.headers["location"] == "/login", (route, cookies, r.status_code)
        assert "Task" not in r.text and "option" not in r.text
    assert stored(path) == before
    with ReviewDB(path) as db:
        assert not db.reviewer("bob").revoked
    assert client(path).get("/login").status_code == 200


# --------------------------------------------------------------------------- another reviewer's tasks


def test_a_reviewer_cannot_read_or_change_another_reviewers_tasks(review):
    path, pw = review
    alice, bob = signed_in(path, pw, "alice"), signed_in(path, pw, "bob")
    mine, theirs = task_ids(path, "alice"), task_ids(path, "bob")
    assert mine and theirs and not set(mine) & set(theirs)
    # bob rates one of his tasks first: alice must not see or change it
    assert rate(bob, theirs[0], comment="bob's private note").status_code == 303
    before = stored(path)
    token = csrf_of(alice.get("/").text)
    for tid in [*theirs, max(mine + theirs) + 1, 0]:
        got = alice.get(f"/tasks/{tid}")
        assert got.status_code == 404 and "bob&#39;s private note" not in got.text and "option a of" not in got.text
        posted = alice.post(f"/tasks/{tid}", data={"csrf": token, "action": "submit", **full_rating(), "reviewer": "bob"})
        assert posted.status_code == 404
        skipped = alice.post(f"/tasks/{tid}", data={"csrf": token, "action": "skip", "reviewer": "bob", "task_id": str(mine[0])})
        assert skipped.status_code == 404
    assert stored(path) == before
    for bad in ("abc", "1e3", "-1", "99999999999999999999"):
        assert alice.get(f"/tasks/{bad}").status_code == 404
    # the queue and /next show only her own tasks
    listed = {int(x) for x in re.findall(r'href="/tasks/(\d+)"', alice.get("/").text)}
    assert listed == set(mine)
    assert int(alice.get("/next").headers["location"].rsplit("/", 1)[1]) in mine
    # a unit rated by both: each reviewer sees only their own rating
    with ReviewDB(path) as db:
        shared = next(t for t in db.tasks_for("bob") if any(u.unit_id == t.unit_id for u in db.tasks_for("alice")))
        alices = next(u for u in db.tasks_for("alice") if u.unit_id == shared.unit_id)
    assert rate(bob, shared.task_id, comment="seen only by bob").status_code == 303
    assert "seen only by bob" not in alice.get(f"/tasks/{alices.task_id}").text
    # the admin page and revocation are for admins only
    assert alice.get("/admin").status_code == 404
    r = alice.post("/admin/revoke", data={"csrf": token, "name": "bob"})
    assert r.status_code == 404
    with ReviewDB(path) as db:
        assert not db.reviewer("bob").revoked
    assert bob.get("/").status_code == 200


# --------------------------------------------------------------------------- cookies, CSRF, headers


def test_session_cookie_is_signed_httponly_samesite_and_bound_to_the_reviewer(review):
    path, pw = review
    c = client(path)
    r = sign_in(c, "alice", pw["alice"])
    cookie = next(v for k, v in r.headers.multi_items() if k == "set-cookie" and v.startswith(SESSION_COOKIE))
    attrs = {a.strip().split("=")[0].lower(): a.strip() for a in cookie.split(";")[1:]}
    assert "httponly" in attrs and attrs["samesite"].lower() == "samesite=strict" and attrs["path"] == "Path=/"
    value = c.cookies[SESSION_COOKIE]
    payload, _, sig = value.partition(".")
    assert "alice" not in value or sig  # signed, not a bare name
    # another reviewer's name under alice's signature is refused
    other = SessionCodec("x").issue("bob", 0)[0].split(".", 1)[0]
    tampered = client(path)
    tampered.cookies.set(SESSION_COOKIE, other + value[len(payload) :])
    assert tampered.get("/").status_code == 303
    # an expired cookie is refused
    with ReviewDB(path) as db:
        secret = db.secret_key()
    assert SessionCodec(secret, max_age=-1).read(value) is None
    assert SessionCodec(secret).read(value).reviewer == "alice"


def test_forms_carry_csrf_tokens_and_cross_site_posts_are_refused(review):
    path, pw = review
    c = signed_in(
        path,
        pw,
        "alice",
    )
    tid = task_ids(path, "alice")[0]
    page = c.get(f"/tasks/{tid}").text
    assert page.count('name="csrf"') == 2  # the rating form and the sign-out form
    assert 'name="csrf"' in client(path).get("/login").text
    before = stored(path)
    for token in (None, "", "wrong", csrf_of(signed_in(path, pw, "bob").get("/").text)):
        form = {"action": "submit", **full_rating(), **({"csrf": token} if token is not None else {})}
        assert c.post(f"/tasks/{tid}", data=form).status_code == 403
        assert c.post("/logout", data={} if token is None else {"csrf": token}).status_code == 403
    assert stored(path) == before
    assert c.get("/").status_code == 200  # still signed in
    good = {"csrf": csrf_of(page), "action": "submit", **full_rating()}
    assert c.post(f"/tasks/{tid}", data=good, headers={"Origin": "http://evil.example"}).status_code == 403
    assert c.post(f"/tasks/{tid}", data=good, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert stored(path) == before
    assert c.post(f"/tasks/{tid}", data=good, headers={"Origin": "http://127.0.0.1"}).status_code == 303
    # the sign-in form's own token: a post without it (or from another page) is refused
    fresh = client(path)
    assert fresh.post("/login", data={"name": "alice", "password": pw["alice"]}).status_code == 400
    assert SESSION_COOKIE not in fresh.cookies


def test_every_response_carries_a_strict_content_security_policy(review):
    path, pw = review
    c = signed_in(path, pw, "carol")
    for url in ("/login", "/", "/rubric", "/admin", f"/tasks/{task_ids(path, 'carol')[0]}", "/tasks/999999", "/nowhere"):
        h = c.get(url).headers
        csp = h["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp and "form-action 'self'" in csp
        assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
        assert h["cache-control"] == "no-store" and h["referrer-policy"] == "same-origin"
    assert client(path).get("/login", headers={"Host": "evil.example"}).status_code == 400  # DNS rebinding


# --------------------------------------------------------------------------- passwords and sign-in


def test_passwords_are_stored_only_as_scrypt_hashes(review):
    path, pw = review
    rows = dict(_rows(path, "SELECT name, pw_hash FROM reviewers"))
    raw = b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())
    for name, password in pw.items():
        assert rows[name].startswith("scrypt$32768$8$1$")
        assert password.encode() not in raw
        assert verify_password(password, rows[name]) and not verify_password(password + "x", rows[name])
    assert oct((path / "review.sqlite").stat().st_mode & 0o777) == "0o600"
    c = client(path)
    assert sign_in(c, "alice", pw["bob"]).status_code == 401
    assert sign_in(c, "nobody", pw["bob"]).status_code == 401


def test_sign_in_attempts_are_rate_limited(review):
    path, pw = review
    now = [1000.0]
    names = RateLimiter(limit=5, window=300, clock=lambda: now[0])
    c = client(path, name_limiter=names)
    for _ in range(5):
        assert sign_in(c, "alice", "guess").status_code == 401
    blocked = sign_in(c, "alice", pw["alice"])  # even the right password waits
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
    assert SESSION_COOKIE not in c.cookies
    assert sign_in(client(path, name_limiter=names), "bob", pw["bob"]).status_code == 303  # per name
    now[0] += 301
    assert sign_in(c, "alice", pw["alice"]).status_code == 303
    # and per client, whatever the names tried
    clients = RateLimiter(limit=3, window=300, clock=lambda: now[0])
    d = client(path, client_limiter=clients)
    for name in ("x1", "x2", "x3"):
        assert sign_in(d, name, "guess").status_code == 401
    assert sign_in(d, "carol", pw["carol"]).status_code == 429


def test_revoked_reviewers_are_signed_out_and_cannot_sign_in(review):
    path, pw = review
    alice, bob = signed_in(path, pw, "alice"), signed_in(path, pw, "bob")
    with ReviewDB(path) as db:  # the administrator's command line: medres review revoke
        db.revoke("alice")
    r = alice.get("/")
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert sign_in(client(path), "alice", pw["alice"]).status_code == 401
    # an admin revokes in the app
    carol = signed_in(path, pw, "carol")
    page = carol.get("/admin").text
    assert "alice" in page and "revoked" in page
    assert carol.post("/admin/revoke", data={"csrf": csrf_of(page), "name": "bob"}).status_code == 303
    assert bob.get("/").status_code == 303
    assert carol.post("/admin/revoke", data={"csrf": csrf_of(page), "name": "carol"}).status_code == 400  # not oneself
    # a new password reinstates
    with ReviewDB(path) as db:
        with pytest.raises(ReviewError, match="already has a password"):
            db.add_reviewer("alice")
        new = db.add_reviewer("alice", reset=True)
    assert sign_in(client(path), "alice", pw["alice"]).status_code == 401
    assert sign_in(client(path), "alice", new).status_code == 303


def test_signing_out_ends_the_session_for_every_copy_of_the_cookie(review):
    path, pw = review
    c = signed_in(path, pw, "alice")
    stolen = c.cookies[SESSION_COOKIE]
    r = c.post("/logout", data={"csrf": csrf_of(c.get("/").text)})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    replay = client(path)
    replay.cookies.set(SESSION_COOKIE, stolen)
    assert replay.get("/").status_code == 303


# --------------------------------------------------------------------------- hostile text


def parsed_tags(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every start tag the browser's parser would see, with its attributes."""
    from html.parser import HTMLParser

    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    P().feed(html)
    return found


@pytest.mark.parametrize("rubric", ["A", "B"])
def test_item_option_context_and_response_text_is_shown_as_text(data, tmp_path, rubric):
    path, pw = new_review(data, tmp_path, rubric, n=8)
    c = signed_in(path, pw, "alice")
    tid = task_ids(path, "alice")[0]
    r = rate(c, tid, rubric=rubric, comment=f"{TEXTAREA} {ONERROR}")
    assert r.status_code == 303
    html = c.get(f"/tasks/{tid}").text
    tags = parsed_tags(html)
    assert not [t for t, _ in tags if t in ("script", "img", "iframe", "object")]
    assert not [(t, a) for t, attrs in tags for a, _ in attrs if a.startswith("on")]  # no event handler attribute anywhere
    assert [t for t, _ in tags].count("textarea") == 1 and html.lower().count("</textarea>") == 1  # only the comment box
    assert "&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt;" in html  # the question, escaped
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the option (and the comment)
    assert "&lt;/textarea&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in html  # the context and the comment
    if rubric == "B":
        assert "&lt;/textarea&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in html  # the model's response
    # the comment round-trips as text
    assert stored(path)[tid][3] == f"{TEXTAREA} {ONERROR}"


# --------------------------------------------------------------------------- rating, skipping, coming back


def test_rate_skip_comment_and_come_back_later(review):
    path, pw = review
    c = signed_in(path, pw, "alice")
    first, second, third = task_ids(path, "alice")[:3]
    # submitting needs every dimension: nothing is written otherwise
    page = c.get(f"/tasks/{first}").text
    partial = {"csrf": csrf_of(page), "action": "submit", "dim_base_validity": "2", "comment": "half done"}
    r = c.post(f"/tasks/{first}", data=partial)
    assert r.status_code == 400 and "Rate every dimension" in r.text and "half done" in r.text
    assert first not in stored(path)
    assert c.post(f"/tasks/{first}", data={**partial, **full_rating(), "dim_base_validity": "7"}).status_code == 400
    assert c.post(f"/tasks/{first}", data={**partial, **full_rating(), "flag": "bogus"}).status_code == 400
    # skip for now: kept with what was filled in, and offered again after the others
    r = c.post(f"/tasks/{first}", data={**partial, "action": "skip"})
    assert r.status_code == 303 and r.headers["location"] == f"/tasks/{second}?saved=1"
    assert stored(path)[first][0] == "skipped"
    assert 'value="2" checked' in c.get(f"/tasks/{first}").text
    r = rate(c, second, flag=["outdated", "gold_incorrect"], comment="fine")
    assert r.headers["location"] == f"/tasks/{third}?saved=1"
    status, vals, flags, comment, revision = stored(path)[second]
    assert status == "rated" and json.loads(vals)["disposition"] == "drop" and json.loads(flags) == ["gold_incorrect", "outdated"]
    assert comment == "fine" and revision == 1
    # coming back: the rating is shown and can be changed (a new revision, the old one in the log)
    page = c.get(f"/tasks/{second}").text
    assert "You rated this task" in page and 'value="drop" checked' in page and ">fine</textarea>" in page
    assert rate(c, second, **{"dim_disposition": "keep"}).status_code == 303
    assert stored(path)[second][4] == 2
    assert _rows(path, f"SELECT COUNT(*) FROM rating_log WHERE task_id = {second}")[0][0] == 2
    queue = c.get("/").text
    assert "1</strong> of" in queue and "skipped (come back later)" in queue
    # with every other task rated, /next comes back to the skipped one
    for tid in task_ids(path, "alice")[2:]:
        rate(c, tid)
    assert c.get("/next").headers["location"] == f"/tasks/{first}"
    rate(c, first)
    assert c.get("/next").headers["location"] == "/"
    assert "All your tasks are rated" in c.get("/").text


# --------------------------------------------------------------------------- a real server


def http_sign_in(url: str, name: str, password: str) -> httpx.Client:
    c = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
    token = csrf_of(c.get("/login").text)
    r = c.post("/login", data={"name": name, "password": password, "csrf": token})
    assert r.status_code == 303, r.text
    return c


def http_rate(c: httpx.Client, task_id: int, comment: str) -> httpx.Response:
    token = csrf_of(c.get(f"/tasks/{task_id}").text)
    return c.post(f"/tasks/{task_id}", data={"csrf": token, "action": "submit", "comment": comment, **full_rating()})


def test_kill_9_between_submissions_loses_no_submitted_rating(review):
    path, pw = review
    mine = task_ids(path, "alice")
    server = review_serve(path).start()
    try:
        c = http_sign_in(server.url, "alice", pw["alice"])
        for i, tid in enumerate(mine[:3]):
            assert http_rate(c, tid, f"before kill {i}").status_code == 303  # acknowledged ...
        c.close()
        server.kill9()  # ... then the process dies without any chance to flush
        kept = stored(path)
        assert [kept[t][3] for t in mine[:3]] == ["before kill 0", "before kill 1", "before kill 2"]
        server = review_serve(path).start()
        c = http_sign_in(server.url, "alice", pw["alice"])
        assert "3</strong> of" in c.get("/").text
        assert http_rate(c, mine[3], "after restart").status_code == 303
        c.close()
        server.kill9()
        assert stored(path)[mine[3]][3] == "after restart" and len(stored(path)) == 4
    finally:
        server.stop()


def test_two_reviewers_submitting_at_once_both_persist(review):
    path, pw = review
    server = review_serve(path).start()
    try:
        clients = {n: http_sign_in(server.url, n, pw[n]) for n in ("alice", "bob")}
        todo = {n: task_ids(path, n)[:6] for n in clients}
        pages = {n: [csrf_of(clients[n].get(f"/tasks/{t}").text) for t in todo[n]] for n in clients}
        barrier = threading.Barrier(2)
        results: dict[str, list[int]] = {n: [] for n in clients}

        def work(name: str) -> None:
            for tid, token in zip(todo[name], pages[name]):
                barrier.wait(timeout=30)  # both submit at the same moment, six times
                r = clients[name].post(f"/tasks/{tid}", data={"csrf": token, "action": "submit", "comment": f"{name} {tid}", **full_rating()})
                results[name].append(r.status_code)

        threads = [threading.Thread(target=work, args=(n,)) for n in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert results == {"alice": [303] * 6, "bob": [303] * 6}
        kept = stored(path)
        for name in clients:
            for tid in todo[name]:
                assert kept[tid][0] == "rated" and kept[tid][3] == f"{name} {tid}"
        for c in clients.values():
            c.close()
    finally:
        server.stop()


def test_rubric_b_tasks_show_the_prompt_without_what_a_setting_added(tmp_path, tiny_suite):
    from medresilience.mitigations.caution import CAUTION_INSTRUCTION
    from medresilience.review.db import ReviewDB
    from medresilience.review.sample import sample_review

    with StubServer(policy=oracle_policy) as srv:
        evaluate(tiny_suite, [stub_spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
    with Store(tmp_path / "run" / "store.sqlite") as st:  # the caution units were sent the caution text
        sent = [m for (m,) in st.conn.execute("SELECT r.messages FROM units u JOIN requests r ON r.key = u.key WHERE u.setting = 'caution'")]
    assert sent and all(CAUTION_INSTRUCTION in m for m in sent)
    sample_review("B", tiny_suite.path, tmp_path / "review", run_dir=tmp_path / "run", n=1000, reviewers=["alice"], seed=3)
    with ReviewDB(tmp_path / "review") as db:
        rows = db.conn.execute("SELECT display, hidden FROM units").fetchall()
    by_probe: dict[str, dict[str, str]] = {}
    for display, hidden in rows:
        h = json.loads(hidden)
        blocks = [b for b in json.loads(display) if b["kind"] == "messages"]
        assert len(blocks) == 1 and CAUTION_INSTRUCTION not in json.dumps(blocks)
        by_probe.setdefault(h["probe_id"], {})[h["setting"]] = json.dumps(blocks)
    assert len(rows) == 2 * len(by_probe) and by_probe
    assert all(v["none"] == v["caution"] for v in by_probe.values())  # the same prompt whatever the setting
