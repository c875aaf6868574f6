"""One process at a time in a run directory (or a build work directory): a lock file holding the
holder's pid, host and start time.

    with RunLock(out, wait=False):   # LockHeld (a MedresError) names the holder when it is taken
        ...

The file is `medres.lock` in the directory. Local processes exclude each other with an advisory
`flock` on it, which the kernel drops when its holder dies, so the lock of a killed run never
blocks the next one; the file's contents say who holds it. A lock file whose holder is gone (a
dead pid on this host, or no flock held on it) is taken over. A lock written on another host
cannot be checked from here: it is not taken over, and the message says which file to delete
once that process is known to be gone. Where `flock` is not available, the contents decide alone.
`wait=True` polls until the holder lets go (telling `on_wait` once, with the holder). The file is
removed on release."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .errors import MedresError
from .jsontypes import JSONObject

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["DirectoryError", "LockHeld", "RunLock", "held"]


class LockHeld(MedresError):
    """The directory is locked by another process (named in the message)."""

    def __init__(self, directory: Path, holder: Mapping[str, object], lock_file: Path, hint: str):
        self.directory, self.holder, self.lock_file = directory, holder, lock_file
        super().__init__(f"{directory} is in use by {describe(holder)} (lock file {lock_file}); {hint}")


class DirectoryError(MedresError):
    """The directory cannot be created or written (a path under a file, read-only, ...)."""

    def __init__(self, directory: Path, what: str, err: OSError):
        why = f"{err.strerror or err}" + (f" ({err.filename})" if err.filename and str(err.filename) != str(directory) else "")
        blocker = next((a for a in directory.parents if a.exists() and not a.is_dir()), None)
        if blocker is not None:
            why = f"{blocker} is a file, not a directory"
        super().__init__(f"cannot use {directory} as the {what}: {why}")


def describe(holder: Mapping[str, object]) -> str:
    """'pid 123 on host h since 2025-01-01T10:00:00+00:00' (what a lock file says of its holder)."""
    if not holder:
        return "another process"
    return f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')} since {holder.get('started', '?')}"


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _read(fd: int) -> JSONObject:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 4096):
        raw += chunk
    try:
        data = json.loads(raw.decode("utf-8", errors="replace")) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class RunLock:
    """An exclusive lock on a directory (created if missing). Re-entering a held lock is an error."""

    NAME = "medres.lock"

    def __init__(
        self,
        directory: Path | str,
        *,
        what: str = "run directory",
        wait: bool = False,
        poll: float = 0.5,
        on_wait: Callable[[str], None] | None = None,
        hint: str | None = None,
    ):
        self.directory = Path(directory)
        self.path = self.directory / self.NAME
        self.what = what
        self.wait = wait
        self.poll = poll
        self.on_wait = on_wait
        self.hint = hint or ("wait for it to finish, or rerun with --wait" if what == "run directory" else "wait for it to finish")
        self._fd: int | None = None

    # ---- public
    def acquire(self) -> RunLock:
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this lock")
        if self.directory.exists() and not self.directory.is_dir():
            raise DirectoryError(self.directory, self.what, NotADirectoryError(errno.ENOTDIR, "it is a file, not a directory"))
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DirectoryError(self.directory, self.what, e) from None
        told = False
        while True:
            try:
                fd = self._try()
            except LockHeld as e:
                if not self.wait:
                    raise
                if not told and self.on_wait is not None:
                    self.on_wait(f"waiting for {describe(e.holder)} to finish with {self.directory} (lock file {self.path})")
                told = True
                time.sleep(self.poll)
                continue
            if fd is not None:
                self._fd = fd
                return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if _same_file(fd, self.path):
                self.path.unlink()
        os.close(fd)  # drops the flock

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    # ---- one attempt: the fd holding the lock, None to try again at once, or LockHeld
    def _try(self) -> int | None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise DirectoryError(self.directory, self.what, e) from None
        try:
            kernel = self._flock(fd)
            if kernel is False:  # held by a live process (here, or across a file system that shares locks)
                raise LockHeld(self.directory, _read(fd), self.path, self.hint)
            if not _same_file(fd, self.path):  # released (and removed) between open and flock
                os.close(fd)
                return None
            holder = _read(fd)
            if holder and not self._stale(holder, kernel):
                raise LockHeld(self.directory, holder, self.path, self._hint_for(holder))
            try:
                self._write(fd)
            except OSError as e:
                raise DirectoryError(self.directory, self.what, e) from None
            return fd
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise

    def _flock(self, fd: int) -> bool | None:
        """True: locked; False: another holds it; None: no kernel locking here."""
        if fcntl is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EACCES):
                return False
            return None  # ENOLCK, EOPNOTSUPP, ...: decide by the contents
        return True

    def _stale(self, holder: Mapping[str, object], kernel: bool | None) -> bool:
        if holder.get("host") != socket.gethostname():
            return False  # cannot be checked from here
        if kernel:  # this host's holders keep the flock while alive: nobody holds it
            return True
        return not _pid_alive(holder.get("pid"))

    def _hint_for(self, holder: Mapping[str, object]) -> str:
        if holder.get("host") != socket.gethostname():
            return f"if that process is gone, delete {self.path} and rerun"
        return self.hint

    def _write(self, fd: int) -> None:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "what": self.what,
        }
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(info) + "\n").encode())
        with contextlib.suppress(OSError):
            os.fsync(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def held(directory: Path | str) -> bool:
    """Whether a live process holds the lock of `directory` now (its lock file exists and its
    flock is taken). Asks with a shared, non-blocking flock on a read-only descriptor, so it works
    on read-only storage and takes nothing. Where `flock` is not available, a lock file counts as held."""
    path = Path(directory) / RunLock.NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        if fcntl is None:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError as e:
            return e.errno in (errno.EAGAIN, errno.EACCES)
        return False
    finally:
        os.close(fd)  # drops the shared flock if it was taken
