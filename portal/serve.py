"""The portal's web server: daphne, with two changes for hostile clients.

`python -m portal.serve` takes daphne's own arguments (deploy/systemd/portal-web.service and
docker-compose.yml run it; `manage.py rundemo` uses the same server class):

- Twisted, under daphne, parses a POST's multipart body itself into `request.args`, which
  daphne never reads, and answers a body it cannot parse with a bare `400 Bad Request`: no
  body, no log line, before the portal sees the request, on every path. Here bodies are left
  to Django, which refuses a malformed one as JSON naming the body (portal/middleware.py).
- The access log writes each request's path with its query string: a token or password a
  client puts in the URL would be kept in the log. Such parameters' values are redacted.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from daphne.cli import CommandLineInterface
from daphne.http_protocol import WebRequest
from daphne.server import Server

REDACTED = "[redacted]"
# A query parameter whose name contains one of these carries a secret (token=, api_key=,
# access_token=, password=, client_secret=, sessionid=).
SECRET_PARAMETER_PARTS = ("token", "key", "password", "passwd", "secret", "session", "auth")


def redact_secrets(path: str) -> str:
    """`path` with the value of every query parameter that names a secret replaced."""
    if "?" not in path:
        return path
    base, _, query = path.partition("?")
    parameters = []
    for parameter in query.split("&"):
        name, equals, _value = parameter.partition("=")
        if equals and any(part in unquote_plus(name).lower() for part in SECRET_PARAMETER_PARTS):
            parameter = f"{name}={REDACTED}"
        parameters.append(parameter)
    return f"{base}?{'&'.join(parameters)}"


class PortalServer(Server):
    def protocol_connected(self, protocol):
        if isinstance(protocol, WebRequest):
            # Twisted's Request(parsePOSTFormSubmission=False), which daphne cannot pass.
            protocol._parsePOSTFormSubmission = False
        super().protocol_connected(protocol)

    def log_action(self, protocol, action, details):
        if isinstance(details.get("path"), str):
            details = {**details, "path": redact_secrets(details["path"])}
        super().log_action(protocol, action, details)


class PortalCommandLineInterface(CommandLineInterface):
    server_class = PortalServer


if __name__ == "__main__":
    PortalCommandLineInterface.entrypoint()
