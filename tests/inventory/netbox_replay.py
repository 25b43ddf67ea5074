"""A replay NetBox for the tests: a real HTTP server on 127.0.0.1 that serves recorded NetBox
4.x responses (tests/inventory/netbox_fixtures/) and records what clients send.

It stands in for NetBox at the HTTP level, so pynetbox and requests run unmodified: token
authentication (403 `Invalid token` otherwise, as NetBox answers), the API root with its
`API-Version` header, `/api/status/`, list endpoints with NetBox's filters, `limit`/`offset`
pagination and `next` links, detail endpoints, and for the export tests POST (create) and PATCH
(partial update) of devices, interfaces, cables and inventory items, answered in the shapes
NetBox returns (inventory items, which the recordings hold none of, start as an empty list).
Unknown filters are refused with 400 (NetBox would ignore them) so a misspelt filter in our code
fails a test instead of silently reading everything.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

FIXTURES = Path(__file__).resolve().parent / "netbox_fixtures"
RECORDED_HOST = "http://netbox.test"
# A NetBox 4.5+ v2 token (`nbt_<key>.<secret>`): pynetbox sends it as `Bearer`, as NetBox wants.
TOKEN = "nbt_ReplayKey0001.0123456789abcdef0123456789abcdef01234567"
PAGINATE_COUNT = 50  # NetBox's default page size
STATUS_LABELS = {"decommissioning": "Decommissioning"}
RELATED = {  # writable foreign keys: body field -> the endpoint its id points into
    "role": "dcim/device-roles",
    "device_type": "dcim/device-types",
    "site": "dcim/sites",
    "location": "dcim/locations",
    "rack": "dcim/racks",
    "device": "dcim/devices",
    "lag": "dcim/interfaces",
}
LENGTH_UNITS = {"m": "Meters", "cm": "Centimeters", "km": "Kilometers", "ft": "Feet"}
# NetBox endpoints the recordings hold no object of: listed empty, as NetBox answers them.
EMPTY_ENDPOINTS = ("dcim/inventory-items",)


class NetboxReplay:
    """`NetboxReplay("small_fabric").start()`; `.url`, `.objects`, `.writes`, `.stop()`."""

    def __init__(self, *datasets: str, max_page_size: int = 1000):
        self.max_page_size = max_page_size
        self.status: dict[str, Any] = {}
        self.objects: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, str]] = []
        self.writes: list[tuple[str, str, Any]] = []  # (method, path, body)
        # endpoint -> the validation error NetBox answers a POST there with (400).
        self.reject_posts: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        for endpoint in EMPTY_ENDPOINTS:
            self.objects[endpoint] = []
        for dataset in datasets:
            self.load(dataset)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def load(self, dataset: str) -> None:
        """Add a recorded dataset: `status.json` and list responses under `<app>/<name>.json`."""
        root = FIXTURES / dataset
        if (root / "status.json").exists():
            self.status = json.loads((root / "status.json").read_text())
        for path in sorted(root.glob("*/*.json")):
            endpoint = f"{path.parent.name}/{path.stem}"
            self.objects.setdefault(endpoint, []).extend(json.loads(path.read_text())["results"])

    def start(self) -> NetboxReplay:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    # --- helpers for tests ---

    def find(self, endpoint: str, **match) -> dict[str, Any]:
        for obj in self.objects[endpoint]:
            if all(_field_matches(obj, key, [str(value)]) for key, value in match.items()):
                return obj
        raise KeyError(f"{endpoint} {match}")

    def remove(self, endpoint: str, predicate) -> None:
        self.objects[endpoint] = [obj for obj in self.objects[endpoint] if not predicate(obj)]

    def posts(self, endpoint: str) -> list[dict]:
        return [body for method, path, body in self.writes if method == "POST" and endpoint in path]

    def patches(self, endpoint: str) -> list[tuple[int, dict]]:
        return [
            (int(path.rstrip("/").rsplit("/", 1)[1]), body)
            for method, path, body in self.writes
            if method == "PATCH" and endpoint in path
        ]

    # --- what the handler calls ---

    def rewrite(self, value: Any) -> Any:
        """Recorded URLs name the recording's host; clients must see ours."""
        text = json.dumps(value).replace(RECORDED_HOST, self.url)
        return json.loads(text)

    def brief(self, endpoint: str, object_id: int | None) -> dict | None:
        if object_id is None:
            return None
        obj = self.find(endpoint, id=object_id)
        if endpoint == "dcim/interfaces":
            keys = ("id", "url", "display", "device", "name", "description", "cable", "_occupied")
        elif endpoint == "dcim/device-types":
            keys = ("id", "url", "display", "manufacturer", "model", "slug", "description")
        else:
            keys = ("id", "url", "display", "name", "slug", "description")
        return {key: copy.deepcopy(obj[key]) for key in keys if key in obj}

    def create(self, endpoint: str, body: dict) -> dict:
        new_id = max((obj["id"] for obj in self.objects.setdefault(endpoint, [])), default=0) + 1
        obj = {
            "id": new_id,
            "url": f"{RECORDED_HOST}/api/{endpoint}/{new_id}/",
            "display_url": f"{RECORDED_HOST}/{endpoint}/{new_id}/",
            "tags": [],
            "custom_fields": {},
            "created": "2026-11-23T10:00:00Z",
            "last_updated": "2026-11-23T10:00:00Z",
        }
        if endpoint == "dcim/devices":
            obj.update(name=body.get("name"), serial="", display=body.get("name"))
        elif endpoint == "dcim/interfaces":
            obj.update(
                display=body.get("name"),
                label="",
                description="",
                lag=None,
                speed=None,
                mgmt_only=False,
                cable=None,
                _occupied=False,
            )
        elif endpoint == "dcim/cables":
            obj.update(display=f"#{new_id}", label="", length=None, length_unit=None)
        elif endpoint == "dcim/inventory-items":
            obj.update(
                display=body.get("name"),
                parent=None,
                label="",
                role=None,
                manufacturer=None,
                part_id="",
                serial="",
                asset_tag=None,
                discovered=False,
                description="",
                component_type=None,
                component_id=None,
                _depth=0,
            )
        self.apply(endpoint, obj, body)
        self.objects[endpoint].append(obj)
        if endpoint == "dcim/cables":
            self._mark_cabled(obj)
        return obj

    def apply(self, endpoint: str, obj: dict, body: dict) -> None:
        """Set fields as NetBox stores them: ids become nested objects, choices value/label."""
        for key, value in body.items():
            if key in RELATED:
                target = RELATED[key]
                obj[key] = self.brief(target, value)
            elif key == "status":
                obj[key] = {"value": value, "label": STATUS_LABELS.get(value, value.title())}
            elif key == "type" and endpoint == "dcim/interfaces":
                obj[key] = {"value": value, "label": value}
            elif key == "length_unit":
                obj[key] = {"value": value, "label": LENGTH_UNITS[value]} if value else None
            elif key.endswith("_terminations"):
                obj[key] = [
                    {
                        "object_type": item["object_type"],
                        "object_id": item["object_id"],
                        "object": self.brief("dcim/interfaces", item["object_id"]),
                    }
                    for item in value
                ]
            else:
                obj[key] = value

    def _mark_cabled(self, cable: dict) -> None:
        brief = {key: cable[key] for key in ("id", "url", "display", "label")}
        brief["description"] = ""
        for side in ("a", "b"):
            for termination in cable[f"{side}_terminations"]:
                interface = self.find("dcim/interfaces", id=termination["object_id"])
                interface.update(cable=brief, cable_end=side.upper(), _occupied=True)

    def list_page(self, endpoint: str, query: list[tuple[str, str]]) -> dict:
        filters: dict[str, list[str]] = {}
        for key, value in query:
            filters.setdefault(key, []).append(value)
        limit = int(filters.pop("limit", [PAGINATE_COUNT])[0])
        offset = int(filters.pop("offset", ["0"])[0])
        filters.pop("brief", None)
        limit = self.max_page_size if limit == 0 else min(limit, self.max_page_size)
        rows = self.objects.get(endpoint, [])
        for key, values in filters.items():
            if rows and not any(_knows_filter(row, key) for row in rows):
                raise _BadFilter(key)
            rows = [row for row in rows if _field_matches(row, key, values)]
        rows = sorted(rows, key=lambda row: row["id"])
        page = rows[offset : offset + limit]
        base = [(key, value) for key, value in query if key not in ("limit", "offset")]

        def link(at: int) -> str:
            return (
                f"{self.url}/api/{endpoint}/?{urlencode([*base, ('limit', limit), ('offset', at)])}"
            )

        return {
            "count": len(rows),
            "next": link(offset + limit) if offset + limit < len(rows) else None,
            "previous": link(max(0, offset - limit)) if offset > 0 else None,
            "results": page,
        }


class _BadFilter(Exception):
    pass


def _knows_filter(row: dict, key: str) -> bool:
    if key == "id" or key in row:
        return True
    if key == "device_id" and "a_terminations" in row:
        return True
    return key.endswith("_id") and key[:-3] in row


def _field_matches(row: dict, key: str, values: list[str]) -> bool:
    """NetBox filter semantics for the filters we serve: any of the values matches."""
    if key == "device_id" and "a_terminations" in row:  # cables: by any end's device
        ends = row["a_terminations"] + row["b_terminations"]
        return any(str(end["object"]["device"]["id"]) in values for end in ends)
    if key.endswith("_id") and key != "id":
        nested = row.get(key[:-3]) or {}
        return str(nested.get("id")) in values
    value = row.get(key)
    if isinstance(value, dict):
        return any(str(value.get(attr)) in values for attr in ("slug", "value", "name"))
    return str(value) in values


def _handler_for(replay: NetboxReplay):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def _send(self, status: int, body: Any, headers: dict | None = None) -> None:
            data = json.dumps(replay.rewrite(body)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            # major.minor, as netbox/netbox/middleware.py sends REST_FRAMEWORK_VERSION
            version = str(replay.status.get("netbox-version", "4.6"))
            self.send_header("API-Version", ".".join(version.split(".")[:2]))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            """NetBox 4.6's answers, recorded: a wrong `Bearer` token is "Invalid v2 token", a
            wrong `Token` one "Invalid v1 token" (netbox/netbox/api/authentication.py)."""
            header = self.headers.get("Authorization") or ""
            if header == f"Bearer {TOKEN}":
                return True
            if header.startswith("Bearer "):
                detail = "Invalid v2 token"
            elif header:
                detail = "Invalid v1 token"
            else:
                detail = "Authentication credentials were not provided."
            self._send(403, {"detail": detail})
            return False

        def _route(self) -> tuple[str, int | None, list[tuple[str, str]]]:
            parts = urlsplit(self.path)
            segments = [s for s in parts.path.split("/") if s]
            if segments[:1] != ["api"]:
                return "", None, []
            segments = segments[1:]
            object_id = int(segments.pop()) if segments and segments[-1].isdigit() else None
            return "/".join(segments), object_id, parse_qsl(parts.query)

        def do_GET(self):
            with replay.lock:
                replay.requests.append(("GET", self.path))
                if not self._authorized():
                    return
                endpoint, object_id, query = self._route()
                if endpoint == "":
                    self._send(200, {"dcim": f"{RECORDED_HOST}/api/dcim/"})
                elif endpoint == "status":
                    self._send(200, replay.status)
                elif object_id is not None:
                    try:
                        self._send(200, replay.find(endpoint, id=object_id))
                    except KeyError:
                        self._send(404, {"detail": "No object matches the given query."})
                elif endpoint not in replay.objects:
                    self._send(404, {"detail": "Not found."})
                else:
                    try:
                        self._send(200, replay.list_page(endpoint, query))
                    except _BadFilter as exc:
                        self._send(400, {str(exc): ["unknown filter (replay refuses it)"]})

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"null")

        def do_POST(self):
            with replay.lock:
                body = self._body()
                replay.requests.append(("POST", self.path))
                if not self._authorized():
                    return
                endpoint, _, _ = self._route()
                if endpoint in replay.reject_posts:
                    self._send(400, replay.reject_posts[endpoint])
                    return
                replay.writes.append(("POST", self.path, body))
                self._send(201, replay.create(endpoint, body))

        def do_PATCH(self):
            with replay.lock:
                body = self._body()
                replay.requests.append(("PATCH", self.path))
                if not self._authorized():
                    return
                replay.writes.append(("PATCH", self.path, body))
                endpoint, object_id, _ = self._route()
                obj = replay.find(endpoint, id=object_id)
                replay.apply(endpoint, obj, body)
                self._send(200, obj)

    return Handler
