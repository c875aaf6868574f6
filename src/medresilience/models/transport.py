"""The chat-completions request on the wire: one aiohttp session per base URL, a JSON body in,
the reply's JSON object out, failures raised as the `openai` SDK's own exceptions.

The SDK's request path builds each request through its option and header models and types each
reply into a `ChatCompletion` (about 0.5 ms of CPU a call, more than the rest of a run's
per-request work); this module sends the same request and reads the same reply without them, and
keeps the SDK's interface where callers depend on it:
- a reply with a status of 400 or more raises the SDK's status error for that status
  (`RateLimitError` for 429, `InternalServerError` for 5xx, ...) built the way the SDK builds it
  (message "Error code: N - <the body's error message>", `.response` with the reply's headers, so
  Retry-After is read the same way, `.body` with the parsed error);
- a connection that fails, is refused or is cut raises `openai.APIConnectionError` with the
  cause chained (a refused connection keeps its ConnectionRefusedError in the chain); a read
  that times out raises `openai.APITimeoutError`;
- a body that is not JSON raises json.JSONDecodeError (or UnicodeDecodeError), as the SDK does.
Headers are the SDK's essentials: a bearer key, JSON content type, a user agent. The proxy comes
from the environment (HTTP(S)_PROXY, NO_PROXY), as with the SDK's client, read once per transport
(aiohttp's `trust_env` reads it, and ~/.netrc, in a worker thread at every request).

The SDK itself (a third of a second to import) is imported when the first failure needs one of
its exceptions (`sdk()`), so a command that makes no failing call never loads it."""

from __future__ import annotations

import functools
import importlib
import json
import urllib.request
from collections.abc import Mapping
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp

from .. import __version__
from ..runtime.jsontypes import JSONValue

#: the name of the SDK's exception for each status (the rest of 4xx: APIStatusError; 5xx: InternalServerError)
_STATUS_ERRORS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


@functools.cache
def sdk() -> ModuleType:
    """The `openai` package, imported on first use."""
    return importlib.import_module("openai")


@functools.cache
def _http() -> ModuleType:
    """The HTTP library whose Request and Response the SDK's exceptions carry (httpx2 or httpx)."""
    return importlib.import_module(sdk().DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0])


def env_proxy(url: str) -> tuple[str | None, dict[str, str] | None]:
    """The proxy the environment names for `url` and the headers that carry its credentials, or
    (None, None): the standard library's reading of HTTP_PROXY / HTTPS_PROXY and NO_PROXY, as
    aiohttp's own."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None, None
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy:
        return None, None
    p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    headers = {"Proxy-Authorization": aiohttp.encode_basic_auth(unquote(p.username), unquote(p.password or ""))} if p.username else None
    return urlunsplit(p._replace(netloc=p.netloc.rpartition("@")[2])), headers


def endpoint(base_url: str, path: str = "chat/completions") -> str:
    """`path` under `base_url` as the SDK joins them: the base's path gains a slash and the path,
    its query string is kept."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path))


class ChatTransport:
    """POSTs chat-completion bodies to one base URL and returns each reply's JSON object."""

    def __init__(self, base_url: str, api_key: str, timeout: float):
        self.base_url = base_url
        self.url = endpoint(base_url)
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"medresilience/{__version__}",
        }
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        self._proxy, self._proxy_headers = env_proxy(self.url)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # made at the first call, inside the running event loop; no cap on connections: the caller
        # bounds the requests in flight
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=self._timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, body: Mapping[str, object]) -> JSONValue:
        """The reply's parsed JSON for one request body; the SDK's exceptions for what fails."""
        data = json.dumps(body, separators=(",", ":")).encode()
        try:
            async with self._open().post(self.url, data=data, headers=self._headers, proxy=self._proxy, proxy_headers=self._proxy_headers) as resp:
                raw = await resp.read()
                status, headers = resp.status, resp.headers
        except TimeoutError as e:  # aiohttp's read or connect timeout (the caller's deadline cancels instead)
            raise sdk().APITimeoutError(request=self._request()) from e
        except aiohttp.ClientError as e:
            raise sdk().APIConnectionError(request=self._request()) from e
        if status >= 400:
            raise self._status_error(status, headers, raw)
        return json.loads(raw)

    def _request(self) -> Any:
        return _http().Request("POST", self.url)

    def _status_error(self, status: int, headers: Mapping[str, str], raw: bytes) -> Exception:
        """The SDK's exception for an error reply, with the same message, body and response."""
        response = _http().Response(status, headers=list(headers.items()), content=raw, request=self._request())
        text = raw.decode("utf-8", "replace").strip()
        try:
            body: object = json.loads(text)
        except ValueError:
            body = text
        data = body.get("error", body) if isinstance(body, dict) else body  # the error object, as the SDK keeps it
        said = data.get("message") if isinstance(data, dict) else None
        message = f"Error code: {status}" + (f" - {said}" if isinstance(said, str) and said else "")
        name = _STATUS_ERRORS.get(status, "InternalServerError" if status >= 500 else "APIStatusError")
        return getattr(sdk(), name)(message, response=response, body=data)
