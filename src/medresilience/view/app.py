"""The viewer's web app (FastAPI, server-rendered Jinja2 pages, no script), read-only.

Routes (GET only; every other method is refused): `/` (the runs), `/units?run=&model=&setting=&
condition=&outcome=&score=&state=&reason=&<facet>=&scope=&versus=&q=&page=` (a filtered, counted page of a
run's units: the stable URL scheme report cells link to; `query.UnitQuery`), `/unit/<run>/<unit id>` (one unit's evidence, side by side with its
clean pair and across models, with its item's other units), `/api/units?...` (the same filter as
JSON, paged) and `/api/unit/<run>/<unit id>`.

The run directories' stores are opened read-only (SQLite mode=ro) and nothing is written
anywhere. Every text is escaped by Jinja2's autoescape; each response carries a strict
Content-Security-Policy (no script, the inline stylesheet by its hash), no caching, no framing;
only Host headers naming the loopback address are served. Binding any other address needs
`public=True` (`medres view --public`), which says what is exposed and still serves only the Host
names it lists (the machine's names and addresses and `allow_hosts`): never any Host, so a page
elsewhere cannot reach the viewer through DNS rebinding."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable, Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.middleware.base import RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ..runtime.errors import MedresError
from .address import VIEWER_HOST, VIEWER_PORT
from .pages import CSP, Links, environment
from .query import QueryError, RunView, close_all, open_runs, parse_query, unit_evidence, units_page
from .render import Renderer

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def create_app(runs: Sequence[RunView], *, allowed_hosts: Sequence[str] = LOOPBACK_HOSTS) -> FastAPI:
    """The app serving runs already opened (`query.open_runs`); they are closed when it stops."""
    pages = Renderer(environment(), runs, Links())

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        close_all(runs)

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, title="medresilience view", lifespan=lifespan)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    app.middleware("http")(_security_headers)

    def bad(e: QueryError, api: bool) -> Response:
        if api:
            return JSONResponse({"error": str(e)}, status_code=400)
        return HTMLResponse(pages.message("Bad filter", str(e)), status_code=400)

    @app.get("/", response_class=HTMLResponse)
    def index() -> Response:
        return HTMLResponse(pages.index())

    @app.get("/units", response_class=HTMLResponse)
    def units(request: Request) -> Response:
        try:
            q = parse_query(request.query_params.multi_items(), runs)
        except QueryError as e:
            return bad(e, False)
        if any(v == "" for _k, v in request.query_params.multi_items()):
            # the filter form sends its empty fields: answer with the filter's stable URL
            return RedirectResponse(q.url(), status_code=303)
        return HTMLResponse(pages.units(q))

    @app.get("/unit/{run}/{unit_id:path}", response_class=HTMLResponse)
    def unit(run: int, unit_id: str) -> Response:
        if not 0 <= run < len(runs):
            return HTMLResponse(pages.message("Not found", "No such run."), status_code=404)
        html = pages.unit(run, unit_id)
        if html is None:
            return HTMLResponse(pages.message("Not found", "No such unit in this run."), status_code=404)
        return HTMLResponse(html)

    @app.get("/api/units")
    def api_units(request: Request) -> Response:
        try:
            q = parse_query(request.query_params.multi_items(), runs)
        except QueryError as e:
            return bad(e, True)
        rv = runs[q.run]
        body = units_page(rv, q)
        body.update(run_dir=str(rv.path), family=rv.family.name if rv.family else None, facets=list(rv.facets), outcomes=list(rv.outcomes_of(q)))
        return JSONResponse(body)

    @app.get("/api/unit/{run}/{unit_id:path}")
    def api_unit(run: int, unit_id: str) -> Response:
        ev = unit_evidence(runs[run], unit_id) if 0 <= run < len(runs) else None
        if ev is None:
            return JSONResponse({"error": "no such unit"}, status_code=404)
        return JSONResponse(ev)

    return app


async def _security_headers(request: Request, call_next: RequestResponseEndpoint) -> Response:
    """Only GET and HEAD are served (nothing here changes anything); every response carries the
    security headers."""
    if request.method not in ("GET", "HEAD"):
        response: Response = Response("the viewer is read-only", status_code=405, media_type="text/plain")
    else:
        response = await call_next(request)
    for k, v in SECURITY_HEADERS.items():
        response.headers[k] = v
    return response


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (or `localhost`): only this machine can connect."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _machine_names() -> list[str]:
    """This machine's host names and the addresses they resolve to (what a browser elsewhere on
    the network would put in its Host header)."""
    names = [socket.gethostname(), socket.getfqdn()]
    with contextlib.suppress(OSError):
        names += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
    return list(dict.fromkeys(n for n in names if n))


def exposure(run_dirs: Sequence[Path | str], host: str, port: int, *, public: bool, allow_hosts: Sequence[str] = ()) -> tuple[list[str], str | None]:
    """The Host names the viewer bound to `host` answers, and what binding it exposes (None on a
    loopback address). A non-loopback address without `public` is a MedresError: binding it would
    serve every unit's messages and replies to whoever can reach the machine."""
    if is_loopback(host):
        return list(dict.fromkeys([*LOOPBACK_HOSTS, host, *allow_hosts])), None
    if not public:
        raise MedresError(
            f"--host {host} is not a loopback address: it would serve the runs to anyone who can reach this machine; "
            "add --public to do so (or use an SSH tunnel to 127.0.0.1)"
        )
    wildcard = host in ("0.0.0.0", "::")
    hosts = list(dict.fromkeys([*LOOPBACK_HOSTS, *([] if wildcard else [host]), *_machine_names(), *allow_hosts]))
    where = "every interface of this machine" if wildcard else f"address {host}"
    message = (
        f"PUBLIC: serving on {where} (port {port}), with no authentication, every unit's messages, replies, "
        f"judgments and call records of: {', '.join(str(d) for d in run_dirs)}; "
        f"answering Host names {', '.join(hosts)} (add others with --allow-host)"
    )
    return hosts, message


def serve(
    run_dirs: Sequence[Path | str],
    host: str = VIEWER_HOST,
    port: int = VIEWER_PORT,
    on_ready: Callable[[str], object] | None = None,
    *,
    public: bool = False,
    allow_hosts: Sequence[str] = (),
    say: Callable[[str], object] = print,
) -> None:  # pragma: no cover - a subprocess test runs it
    """Open the runs and serve them on host:port until interrupted; `on_ready(url)` is called once
    the runs are indexed. A non-loopback `host` needs `public` (see `exposure`), and `say` is told
    what that exposes before anything is bound."""
    import uvicorn

    hosts, message = exposure(run_dirs, host, port, public=public, allow_hosts=allow_hosts)
    runs = open_runs(run_dirs)
    app = create_app(runs, allowed_hosts=hosts)
    if message is not None:
        say(message)
    if on_ready is not None:
        on_ready(f"http://{host}:{port}/")
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False, date_header=False, access_log=False)
