"""A local server on 127.0.0.1 that speaks the part of the Hugging Face Hub's HTTP API that
huggingface_hub uses to download a dataset, so that `medres import hf:...` is tested without the
real hub (point HF_ENDPOINT at `server.url`).

Endpoints (repo = OWNER/NAME, rev = a branch, tag or commit id, URL-quoted):

- ``GET /api/datasets/{repo}`` and ``GET /api/datasets/{repo}/revision/{rev}``: the dataset's
  info: id, sha (the commit the revision resolves to), siblings, gated, private.
- ``GET /api/datasets/{repo}/tree/{rev}[/{path}]``: the files under `path` (``recursive``
  honoured), each {type, path, size, oid}.
- ``POST /api/datasets/{repo}/paths-info/{rev}``: the entries of the paths named in the form or
  JSON body (``paths``).
- ``HEAD`` / ``GET /datasets/{repo}/resolve/{rev}/{path}``: the file, with the headers the client
  reads: ``X-Repo-Commit``, ``ETag`` (the git blob id, quoted) and ``Content-Length``.

A path in a repo's `lfs` is listed as the hub lists an LFS file (its `lfs` {oid: the content's
SHA-256, size, pointerSize}; `oid` the blob id of its pointer file) and served with the headers
the client reads for one (``X-Linked-Etag``: the SHA-256, ``X-Linked-Size``). A path in a repo's
`served` is downloaded as those bytes instead of the committed ones, while its listing and ETag
still name the committed file: a mirror serving other content under the same id.

A gated dataset answers its info, tree and card (README.md) to anyone, like the hub, and its other
files only to a request
carrying ``Authorization: Bearer <token>`` with a token in `tokens`; others get 401 with
``X-Error-Code: GatedRepo``. An unknown dataset is 404 ``RepoNotFound``, an unknown revision 404
``RevisionNotFound``, an unknown file 404 ``EntryNotFound``. Every request is logged in
`requests` as (method, path) so tests can tell whether the network was used.

    repo = HubRepo("org/bench")
    commit = repo.commit({"README.md": b"...", "data/x.parquet": parquet_bytes})
    with HubServer([repo]) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from .loopback import LoopbackServer

__all__ = ["HubRepo", "HubServer", "git_blob_id", "lfs_pointer"]


def git_blob_id(data: bytes) -> str:
    """The git object id of a file's bytes (what the hub reports as a small file's oid and ETag)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    """The git LFS pointer file that stands for `data` in the repository."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n".encode()


@dataclass
class HubRepo:
    """One dataset repository: commits (id -> {path: bytes}) and refs (branch or tag -> commit id);
    `lfs`: the paths stored as LFS files; `served`: path -> the bytes a download gets instead."""

    repo_id: str
    gated: bool = False
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    lfs: set[str] = field(default_factory=set)
    served: dict[str, bytes] = field(default_factory=dict)

    def commit(self, files: dict[str, bytes], ref: str = "main") -> str:
        """Add a commit holding exactly `files` and point `ref` at it; returns its 40-hex id."""
        digest = hashlib.sha1(json.dumps({p: git_blob_id(b) for p, b in sorted(files.items())}).encode() + str(len(self.commits)).encode()).hexdigest()
        self.commits[digest] = dict(files)
        self.refs[ref] = digest
        return digest

    def resolve(self, rev: str) -> str | None:
        if rev in self.commits:
            return rev
        return self.refs.get(rev)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    # ------------------------------------------------------------------ replies

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, obj: object, headers: dict[str, str] | None = None, head: bool = False) -> None:
        self._send(status, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})}, head)

    def _error(self, status: int, code: str, message: str, head: bool = False) -> None:
        self._json(status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message}, head)

    # ------------------------------------------------------------------ routing

    def _repo(self, parts: list[str]) -> tuple[HubRepo | None, list[str]]:
        if len(parts) < 2:
            return None, parts
        repo = self.server.repos.get(f"{parts[0]}/{parts[1]}")
        return repo, parts[2:]

    def _authorised(self, repo: HubRepo) -> bool:
        if not repo.gated:
            return True
        auth = self.headers.get("Authorization", "")
        return auth.startswith("Bearer ") and auth[7:] in self.server.tokens

    def _file_entry(self, repo: HubRepo, path: str, data: bytes) -> dict[str, object]:
        if path not in repo.lfs:
            return {"type": "file", "path": path, "size": len(data), "oid": git_blob_id(data)}
        pointer = lfs_pointer(data)
        lfs = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": len(pointer)}
        return {"type": "file", "path": path, "size": len(data), "oid": git_blob_id(pointer), "lfs": lfs}

    def _entries(self, repo: HubRepo, files: dict[str, bytes], under: str, recursive: bool) -> list[dict[str, object]]:
        prefix = f"{under.strip('/')}/" if under.strip("/") else ""
        out: list[dict[str, object]] = []
        folders: set[str] = set()
        for p in sorted(files):
            if not p.startswith(prefix):
                continue
            rest = p[len(prefix) :]
            if not recursive and "/" in rest:
                folders.add(prefix + rest.split("/", 1)[0])
                continue
            if recursive:
                parts = rest.split("/")[:-1]
                folders.update(prefix + "/".join(parts[: i + 1]) for i in range(len(parts)))
            out.append(self._file_entry(repo, p, files[p]))
        return [{"type": "directory", "path": f, "oid": git_blob_id(f.encode()), "size": 0} for f in sorted(folders)] + out

    def _info(self, repo: HubRepo, commit: str) -> dict[str, object]:
        return {
            "id": repo.repo_id,
            "sha": commit,
            "private": False,
            "disabled": False,
            "gated": "auto" if repo.gated else False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "lastModified": "2026-01-01T00:00:00.000Z",
            "siblings": [{"rfilename": p} for p in sorted(repo.commits[commit])],
        }

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        self.server.requests.append((method, url.path))
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        head = method == "HEAD"
        if parts[:2] == ["api", "datasets"]:
            repo, rest = self._repo(parts[2:])
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository not found")
            if not rest or rest[0] == "revision":
                rev = rest[1] if len(rest) > 1 else "main"
                commit = repo.resolve(rev)
                if commit is None:
                    return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                return self._json(200, self._info(repo, commit), head=head)
            if rest[0] in ("tree", "paths-info") and len(rest) > 1:
                commit = repo.resolve(rest[1])
                if commit is None:
                    return self._error(404, "RevisionNotFound", f"Invalid rev id: {rest[1]}")
                files = repo.commits[commit]
                if rest[0] == "tree":
                    recursive = parse_qs(url.query).get("recursive", ["false"])[0].lower() in ("1", "true")
                    return self._json(200, self._entries(repo, files, "/".join(rest[2:]), recursive), head=head)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode() if length else ""
                try:
                    paths = json.loads(raw).get("paths", [])
                except ValueError:
                    paths = parse_qs(raw).get("paths", [])
                entries = [e for e in self._entries(repo, files, "", True) if e["path"] in set(paths) and e["type"] == "file"]
                return self._json(200, entries, head=head)
            return self._error(404, "EntryNotFound", "unknown endpoint")
        if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
            repo, _ = self._repo(parts[1:3])
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository not found", head)
            commit = repo.resolve(parts[4])
            if commit is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {parts[4]}", head)
            path = "/".join(parts[5:])
            if path not in ("README.md", ".gitattributes") and not self._authorised(repo):  # the card is public
                return self._error(
                    401,
                    "GatedRepo",
                    f"Access to dataset {repo.repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in.",
                    head,
                )
            data = repo.commits[commit].get(path)
            if data is None:
                return self._error(404, "EntryNotFound", f"{path} does not exist", head)
            headers = {"X-Repo-Commit": commit, "ETag": f'"{git_blob_id(data)}"', "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
            if path in repo.lfs:
                headers.update(
                    {"ETag": f'"{git_blob_id(lfs_pointer(data))}"', "X-Linked-Etag": f'"{hashlib.sha256(data).hexdigest()}"', "X-Linked-Size": str(len(data))}
                )
            return self._send(200, repo.served.get(path, data), headers, head)
        return self._error(404, "EntryNotFound", "unknown endpoint", head)

    def do_GET(self) -> None:
        self._route("GET")

    def do_HEAD(self) -> None:
        self._route("HEAD")

    def do_POST(self) -> None:
        self._route("POST")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    repos: dict[str, HubRepo]
    tokens: set[str]
    requests: list[tuple[str, str]]


class HubServer(LoopbackServer):
    """The local hub, serving `repos` on 127.0.0.1 (a free port) from a background thread."""

    def __init__(self, repos: list[HubRepo], tokens: set[str] | None = None):
        super().__init__(_Server(("127.0.0.1", 0), _Handler))
        self._server.repos = {r.repo_id: r for r in repos}
        self._server.tokens = set(tokens or ())
        self._server.requests = []

    @property
    def url(self) -> str:
        return self.root_url
