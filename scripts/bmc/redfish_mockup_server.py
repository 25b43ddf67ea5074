"""The project's Redfish emulator for what sushy-emulator lacks: an event log tests can append
to, firmware inventory, sensors and an HGX-like GPU baseboard.

It serves a directory in the layout of DMTF's Redfish-Mockup-Server
(github.com/DMTF/Redfish-Mockup-Server, redfishMockupServer.py): the resource at URI
`/redfish/v1/X/Y` is the file `<mockup>/redfish/v1/X/Y/index.json` (or `<mockup>/X/Y/index.json`
in the short form of DMTF's own public-rackmount1), so any mockup in that layout
(DMTF's public-rackmount1, a dump of a real BMC made with DMTF's Redfish-Mockup-Creator) loads as
it is. Like DMTF's server it answers GET from those files; unlike it, it asks for HTTP Basic auth
on everything but the service root (as a BMC does), listens on loopback only, and accepts
`POST <a LogService>/Entries` with a LogEntry body, which it stores as the next member (a new
`Entries/<n>/index.json`, so writing such a file by hand works too). Files are read on every
request: what a test writes is what the next GET sees.

    python scripts/bmc/redfish_mockup_server.py --mockup DIR --port 8620 \
        --username portal --password-file FILE

The shipped HGX-like tree is scripts/bmc/mockups/hgx (its README cites its sources). Stdlib
only, so scripts/bmc-up can start it before anything else is importable.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import threading
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

MAX_BODY_BYTES = 64 * 1024
LOOPBACK = "127.0.0.1"


def _redfish_error(message: str) -> dict:
    # DSP0266 section 9.6: the error body a client such as sushy reads its message from.
    return {
        "error": {
            "code": "Base.1.8.GeneralError",
            "message": message,
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.8.GeneralError", "Message": message}],
        }
    }


class MockupServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mockup: Path, port: int, username: str, password: str):
        self.mockup = mockup.resolve()
        # DMTF's mockups come in two forms: the full path (`redfish/v1/Systems/...`) and the
        # short form its server's `--short-form` serves (`Systems/...`, as public-rackmount1).
        self.short_form = not (self.mockup / "redfish" / "v1" / "index.json").is_file()
        self.username = username
        self.password = password
        self.append_lock = threading.Lock()  # two appends never take the same entry number
        super().__init__((LOOPBACK, port), MockupHandler)


class MockupHandler(BaseHTTPRequestHandler):
    server: MockupServer
    # One request per connection: simple, and a BMC poll makes only a handful.
    protocol_version = "HTTP/1.0"

    def log_message(self, format, *args):
        pass  # a test run polls often; the log would only grow

    def _resource_dir(self) -> Path | None:
        path = urlsplit(self.path).path.rstrip("/") or "/"
        if self.server.short_form:
            if path != "/redfish/v1" and not path.startswith("/redfish/v1/"):
                return None
            path = path.removeprefix("/redfish/v1")
        directory = (self.server.mockup / path.lstrip("/")).resolve()
        if directory != self.server.mockup and self.server.mockup not in directory.parents:
            return None  # `..` out of the mockup
        return directory

    def _send(self, status: int, body: dict | None = None, headers: dict | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
            self.send_header("OData-Version", "4.0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        # The service root and its OData documents answer anyone (DSP0266 13.3.1).
        if urlsplit(self.path).path.rstrip("/") in ("/redfish", "/redfish/v1"):
            return True
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            username, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return hmac.compare_digest(username, self.server.username) and hmac.compare_digest(
            password, self.server.password
        )

    def _refuse_login(self) -> None:
        self._send(
            HTTPStatus.UNAUTHORIZED,
            _redfish_error("The login was refused."),
            {"WWW-Authenticate": 'Basic realm="redfish"'},
        )

    def do_GET(self):
        if not self._authorised():
            return self._refuse_login()
        directory = self._resource_dir()
        index = directory / "index.json" if directory else None
        if index is None or not index.is_file():
            return self._send(HTTPStatus.NOT_FOUND, _redfish_error(f"No resource at {self.path}."))
        self._send(HTTPStatus.OK, json.loads(index.read_text(encoding="utf-8")))

    def do_POST(self):
        if not self._authorised():
            return self._refuse_login()
        directory = self._resource_dir()
        if (
            directory is None
            or directory.name != "Entries"
            or not (directory / "index.json").is_file()
        ):
            return self._send(
                HTTPStatus.METHOD_NOT_ALLOWED,
                _redfish_error("Only a LogService's Entries collection accepts POST here."),
            )
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY_BYTES:
            return self._send(HTTPStatus.BAD_REQUEST, _redfish_error("Send a LogEntry as JSON."))
        try:
            entry = json.loads(self.rfile.read(length))
        except ValueError:
            return self._send(HTTPStatus.BAD_REQUEST, _redfish_error("The body is not JSON."))
        if not isinstance(entry, dict) or not isinstance(entry.get("Message"), str):
            return self._send(HTTPStatus.BAD_REQUEST, _redfish_error("A LogEntry needs a Message."))
        entry = append_log_entry(directory, entry, lock=self.server.append_lock)
        self._send(HTTPStatus.CREATED, entry, {"Location": entry["@odata.id"]})


def append_log_entry(entries_dir: Path, entry: dict, *, lock: threading.Lock | None = None) -> dict:
    """Store `entry` as the next member of the Entries collection at `entries_dir`."""
    with lock or threading.Lock():
        collection_file = entries_dir / "index.json"
        collection = json.loads(collection_file.read_text(encoding="utf-8"))
        collection_uri = collection["@odata.id"].rstrip("/")
        numbers = [
            int(child.name)
            for child in entries_dir.iterdir()
            if child.is_dir() and child.name.isdigit()
        ]
        entry_id = str(max(numbers, default=0) + 1)
        entry = {
            "@odata.type": "#LogEntry.v1_15_0.LogEntry",
            "@odata.id": f"{collection_uri}/{entry_id}",
            "Id": entry_id,
            "Name": f"Log Entry {entry_id}",
            "EntryType": "SEL",
            "Severity": "OK",
            "Created": datetime.now(UTC).isoformat(timespec="seconds"),
            **entry,
        }
        entry["Id"], entry["@odata.id"] = entry_id, f"{collection_uri}/{entry_id}"
        (entries_dir / entry_id).mkdir()
        (entries_dir / entry_id / "index.json").write_text(json.dumps(entry, indent=2))
        collection["Members"] = [*collection.get("Members", []), {"@odata.id": entry["@odata.id"]}]
        collection["Members@odata.count"] = len(collection["Members"])
        temporary = collection_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(collection, indent=2))
        temporary.replace(collection_file)  # a GET never reads half a collection
        return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mockup", required=True, type=Path, help="a Redfish-Mockup-Server tree")
    parser.add_argument("--port", type=int, default=8620)
    parser.add_argument("--username", required=True)
    parser.add_argument("--password-file", required=True, type=Path)
    args = parser.parse_args()
    if not any((args.mockup / root / "index.json").is_file() for root in ("redfish/v1", ".")):
        parser.error(f"{args.mockup} has no (redfish/v1/)index.json: not a mockup directory")
    password = args.password_file.read_text(encoding="utf-8").strip()
    server = MockupServer(args.mockup, args.port, args.username, password)
    print(f"serving {args.mockup} on http://{LOOPBACK}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
