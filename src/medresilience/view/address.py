"""Where the evidence viewer (`medres view`) listens unless told otherwise, and so where the
report's counts link to unless `medres report --viewer-url` says another address: the one place
its default host and port are written."""

from __future__ import annotations

#: the viewer binds the loopback address unless told otherwise
VIEWER_HOST = "127.0.0.1"
VIEWER_PORT = 8766
VIEWER_URL = f"http://{VIEWER_HOST}:{VIEWER_PORT}"
