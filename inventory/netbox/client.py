"""Talking to NetBox through pynetbox: connect, read devices/interfaces/cables, write.

Every failure of the remote side becomes `NetboxError` with a message an operator can act on
(wrong URL, token refused, NetBox rejected a write and why); nothing else escapes from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pynetbox
import requests
from pynetbox.core.query import ContentError, Request, RequestError

# NetBox takes repeated filters (`device_id=1&device_id=2`); batches keep URLs short.
FILTER_BATCH = 50
REQUEST_TIMEOUT_S = 30
# Objects per list request. Without a limit pynetbox reads the first page, then asks for all
# the rest in ONE request (pynetbox/core/query.py, Request.get: `"limit": self.limit or
# req["count"]`), which NetBox caps at MAX_PAGE_SIZE (1000): against a real NetBox 4.6 with
# the SAKURAONE fleet, 1000 interfaces with their link peers and connected endpoints took longer
# than REQUEST_TIMEOUT_S to serialise. Pages of this size each answer in a fraction of it.
PAGE_SIZE = 100


class NetboxError(Exception):
    """NetBox could not be reached, refused us, or rejected a request."""


@dataclass
class NetboxSnapshot:
    """What an import reads: devices with mapped roles, their interfaces, cables among them."""

    devices: list[dict[str, Any]] = field(default_factory=list)
    interfaces: list[dict[str, Any]] = field(default_factory=list)
    cables: list[dict[str, Any]] = field(default_factory=list)


class _TimeoutSession(requests.Session):
    def request(self, *args, **kwargs):
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        return super().request(*args, **kwargs)


def describe_request_error(exc: Exception) -> str:
    if isinstance(exc, RequestError):
        status = exc.req.status_code
        detail = exc.error
        try:
            body = exc.req.json()
            detail = body.get("detail", body) if isinstance(body, dict) else body
        except ValueError:
            pass
        if status in (401, 403):
            return f"NetBox refused the API token (HTTP {status}: {detail})"
        if status == 404:
            return f"not found on NetBox: {exc.req.url}"
        return f"NetBox answered HTTP {status} to {exc.req.request.method} {exc.req.url}: {detail}"
    if isinstance(exc, ContentError):
        return "the URL answered with something that is not JSON: is it a NetBox?"
    if isinstance(exc, requests.exceptions.RequestException):
        return f"cannot reach NetBox: {exc}"
    return str(exc)


class NetboxClient:
    """A thin wrapper over `pynetbox.api` returning plain dicts, raising only NetboxError."""

    def __init__(self, url: str, token: str):
        self.url = url.rstrip("/")
        self.api = pynetbox.api(self.url, token=token)
        self.api.http_session = _TimeoutSession()

    def _call(self, function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (RequestError, ContentError, requests.exceptions.RequestException) as exc:
            raise NetboxError(describe_request_error(exc)) from exc

    def check(self) -> str:
        """The NetBox version; proves the URL is a NetBox and the token is accepted."""
        status = self._call(self.api.status)
        # /api/status/ may be readable anonymously; a read of what we need proves the token.
        self._call(lambda: list(self.api.dcim.devices.filter(limit=1, offset=0)))
        return str(status.get("netbox-version", "unknown"))

    def _list(self, endpoint, **filters) -> list[dict[str, Any]]:
        return self._call(
            lambda: [dict(record) for record in endpoint.filter(limit=PAGE_SIZE, **filters)]
        )

    def _batched(self, endpoint, key: str, values: Iterable, **filters) -> Iterator[dict]:
        values = sorted(set(values))
        for start in range(0, len(values), FILTER_BATCH):
            yield from self._list(
                endpoint, **{key: values[start : start + FILTER_BATCH]}, **filters
            )

    def devices(self, *, role_slugs: Iterable[str], site: str | None = None) -> list[dict]:
        filters: dict[str, Any] = {"role": sorted(role_slugs)}
        if site:
            filters["site"] = site
        return self._list(self.api.dcim.devices, **filters)

    def devices_named(self, names: Iterable[str]) -> list[dict]:
        return list(self._batched(self.api.dcim.devices, "name", names))

    def interfaces_of(self, device_ids: Iterable[int]) -> list[dict]:
        return list(self._batched(self.api.dcim.interfaces, "device_id", device_ids))

    def inventory_items_of(self, device_ids: Iterable[int]) -> list[dict]:
        return list(self._batched(self.api.dcim.inventory_items, "device_id", device_ids))

    def cables_of(self, device_ids: Iterable[int]) -> list[dict]:
        """Cables with an end on any of the devices, each once."""
        seen: dict[int, dict] = {}
        for cable in self._batched(self.api.dcim.cables, "device_id", device_ids):
            seen.setdefault(cable["id"], cable)
        return [seen[key] for key in sorted(seen)]

    def snapshot(self, *, role_slugs: Iterable[str], site: str | None = None) -> NetboxSnapshot:
        devices = self.devices(role_slugs=role_slugs, site=site)
        ids = [device["id"] for device in devices]
        return NetboxSnapshot(
            devices=devices, interfaces=self.interfaces_of(ids), cables=self.cables_of(ids)
        )

    # --- lookups and writes for the export ---

    def one(self, endpoint_name: str, **filters) -> dict | None:
        app, name = endpoint_name.split(".")
        endpoint = getattr(getattr(self.api, app), name)
        found = self._list(endpoint, **filters)
        return found[0] if found else None

    def all(self, endpoint_name: str, **filters) -> list[dict]:
        app, name = endpoint_name.split(".")
        return self._list(getattr(getattr(self.api, app), name), **filters)

    def create(self, endpoint_name: str, body: dict) -> dict:
        app, name = endpoint_name.split(".")
        endpoint = getattr(getattr(self.api, app), name)
        return self._call(lambda: dict(endpoint.create(body)))

    def update(self, endpoint_name: str, object_id: int, body: dict) -> None:
        """PATCH only the given fields (pynetbox's Record.save sends the diff it tracks; a
        direct PATCH keeps the body exactly what we decided)."""
        app, name = endpoint_name.split(".")
        endpoint = getattr(getattr(self.api, app), name)
        request = Request(
            key=object_id,
            base=endpoint.url,
            token=self.api.token,
            http_session=self.api.http_session,
        )
        self._call(request.patch, body)
