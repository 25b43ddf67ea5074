"""BMC logins, read from a file on the server and never sent anywhere else.

`Node.bmc_credentials_ref` names an entry; the file named by `settings.BMC_CREDENTIALS_FILE` maps
each name to a login, as JSON or YAML (the same shape as the fabric's store):

    {"redfish/supermicro": {"username": "ADMIN", "password": "..."}}

An empty reference uses the entry named `default`. No API response, page, log line, audit row,
metric or Action records the secrets: drivers ask for them right before connecting, and errors
name only the reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.conf import settings

from inventory.bmc.drivers.base import BmcNotConfigured

DEFAULT_REFERENCE = "default"


@dataclass(frozen=True)
class BmcCredentials:
    username: str
    password: str = field(repr=False)


def load_bmc_credentials(reference: str) -> BmcCredentials:
    """The login for `reference` (or for `default` when it is empty)."""
    reference = reference or DEFAULT_REFERENCE
    entry = _read_store().get(reference)
    if not isinstance(entry, dict):
        raise BmcNotConfigured(f"no BMC credentials named {reference!r} in the store")
    username, password = entry.get("username"), entry.get("password")
    if not isinstance(username, str) or not username:
        raise BmcNotConfigured(f"BMC credentials {reference!r} have no username")
    if not password:
        raise BmcNotConfigured(f"BMC credentials {reference!r} have no password")
    return BmcCredentials(username=username, password=str(password))


def _read_store() -> dict:
    if not settings.BMC_CREDENTIALS_FILE:
        raise BmcNotConfigured("BMC_CREDENTIALS_FILE is not set")
    path = Path(settings.BMC_CREDENTIALS_FILE)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise BmcNotConfigured(f"cannot read the BMC credentials store: {error.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        # The parser's message could quote a secret; name the file only.
        raise BmcNotConfigured(f"the BMC credentials store {path.name} is not valid") from None
    if not isinstance(data, dict):
        raise BmcNotConfigured(f"the BMC credentials store {path.name} must map names to logins")
    return data
