"""Switch login credentials, read from a file on the server and never sent anywhere else.

`Switch.credentials_ref` (inventory) names an entry; the file named by
`settings.FABRIC_CREDENTIALS_FILE` maps each name to a login, as JSON or YAML:

    {"sonic/leaf": {"username": "admin", "password": "..."},
     "sonic/spine": {"username": "admin", "key_file": "/etc/portal/keys/spine_ed25519"}}

An empty reference uses the entry named `default`. No API, page, log line or Action records the
secrets: drivers ask for them right before connecting, and errors name only the reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.conf import settings

from fabric.drivers.base import FabricError

DEFAULT_REFERENCE = "default"


class CredentialsUnavailable(FabricError):
    """The store has no usable entry for a reference (a configuration problem: do not retry)."""


@dataclass(frozen=True)
class SwitchCredentials:
    username: str
    password: str | None = field(default=None, repr=False)
    key_file: str | None = None
    key_passphrase: str | None = field(default=None, repr=False)


def load_credentials(reference: str) -> SwitchCredentials:
    """The login for `reference` (or for `default` when it is empty)."""
    reference = reference or DEFAULT_REFERENCE
    entries = _read_store()
    entry = entries.get(reference)
    if not isinstance(entry, dict):
        raise CredentialsUnavailable(f"no credentials named {reference!r} in the store")
    username = entry.get("username")
    password = entry.get("password")
    key_file = entry.get("key_file")
    if not isinstance(username, str) or not username:
        raise CredentialsUnavailable(f"credentials {reference!r} have no username")
    if not password and not key_file:
        raise CredentialsUnavailable(f"credentials {reference!r} need a password or a key_file")
    if key_file and not Path(key_file).is_file():
        raise CredentialsUnavailable(f"credentials {reference!r}: key file is missing")
    return SwitchCredentials(
        username=username,
        password=str(password) if password else None,
        key_file=str(key_file) if key_file else None,
        key_passphrase=entry.get("key_passphrase"),
    )


def _read_store() -> dict:
    path_setting = settings.FABRIC_CREDENTIALS_FILE
    if not path_setting:
        raise CredentialsUnavailable("FABRIC_CREDENTIALS_FILE is not set")
    path = Path(path_setting)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CredentialsUnavailable(
            f"cannot read the credentials store: {error.strerror}"
        ) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        # The parser's message could quote a secret; name the file only.
        raise CredentialsUnavailable(f"the credentials store {path.name} is not valid") from None
    if not isinstance(data, dict):
        raise CredentialsUnavailable(f"the credentials store {path.name} must map names to logins")
    return data
