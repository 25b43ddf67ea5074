"""Serve every simulated node's exporters from one process on loopback.

    python -m telemetry.exporter --dir var/telemetry --port 9400

Paths: /dcgm/<hostname>/metrics (dcgm-exporter), /node/<hostname>/metrics (node_exporter) and
/-/ready.
Prometheus reaches each node as its own target through file-based service discovery, with the
path in `__metrics_path__` and the node's name as `instance` (telemetry/config.py), so one
listener serves a hundred nodes. Prints one JSON line ({"port": N}) once it listens.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from telemetry.exporter.metrics import read_state, render_dcgm, render_node

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


STATE_MAX_AGE_SECONDS = 0.5


class StateCache:
    """The state directory read at most every STATE_MAX_AGE_SECONDS for all requests: a
    hundred nodes' scrapes would otherwise each read every node's job mapping files."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.lock = threading.Lock()
        self.read_at = float("-inf")
        self.state = None

    def get(self):
        with self.lock:
            if time.monotonic() - self.read_at > STATE_MAX_AGE_SECONDS:
                self.state = read_state(self.directory)
                self.read_at = time.monotonic()
            return self.state


def make_handler(directory: Path):
    cache = StateCache(directory)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            if parts == ["-", "ready"]:
                self._reply(b"ready\n")
                return
            if len(parts) != 3 or parts[0] not in ("dcgm", "node") or parts[2] != "metrics":
                self.send_error(404, "use /dcgm/<hostname>/metrics or /node/<hostname>/metrics")
                return
            state = cache.get()
            hostname = parts[1]
            if hostname not in state.nodes:
                self.send_error(404, f"no node {hostname} in exporter-spec.json")
                return
            if parts[0] == "dcgm":
                body = render_dcgm(state, hostname, time.time())
            else:
                body = render_node(state, hostname)
            self._reply(body.encode())

        def _reply(self, payload: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format, *args):
            pass

    return Handler


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path, help="exporter state directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9400, help="0: any free port")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(args.dir))
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
