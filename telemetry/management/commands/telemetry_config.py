"""Write the Prometheus/Alertmanager configuration and the exporter's node list from the
inventory (telemetry/config.py), for scripts/telemetry-up.

    manage.py telemetry_config --dir var/telemetry --webhook-url http://127.0.0.1:8000/api/faults/alertmanager/

With --create-token, a portal user `alertmanager` (on-call role: the webhook needs a fault
actor) gets an API token written to <dir>/webhook-token unless that file already holds one.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from telemetry.config import Intervals, TelemetryPorts, inventory_nodes, write_config


class Command(BaseCommand):
    help = "Generate Prometheus and Alertmanager configuration from the inventory."

    def add_arguments(self, parser):
        parser.add_argument("--dir", required=True, type=Path)
        parser.add_argument(
            "--webhook-url", default="http://127.0.0.1:8000/api/faults/alertmanager/"
        )
        parser.add_argument("--prometheus-port", type=int, default=9090)
        parser.add_argument("--alertmanager-port", type=int, default=9093)
        parser.add_argument("--exporter-port", type=int, default=9400)
        parser.add_argument("--interval", type=float, default=15.0,
                            help="scrape and rule evaluation interval, seconds")
        parser.add_argument("--group-wait", type=float, default=30.0)
        parser.add_argument("--create-token", action="store_true")

    def handle(self, *args, **options):
        directory: Path = options["dir"]
        directory.mkdir(parents=True, exist_ok=True)
        token_file = directory / "webhook-token"
        if options["create_token"] and not (token_file.exists() and token_file.read_text().strip()):
            token_file.write_text(self._create_token() + "\n")
            token_file.chmod(0o600)
        elif not token_file.exists():
            token_file.write_text("")
            token_file.chmod(0o600)
        nodes = inventory_nodes()
        write_config(
            directory,
            nodes=nodes,
            webhook_url=options["webhook_url"],
            token_file=token_file,
            ports=TelemetryPorts(
                prometheus=options["prometheus_port"],
                alertmanager=options["alertmanager_port"],
                exporter=options["exporter_port"],
            ),
            intervals=Intervals(
                scrape=options["interval"],
                evaluation=options["interval"],
                group_wait=options["group_wait"],
            ),
        )
        self.stdout.write(f"telemetry_config: {len(nodes)} nodes -> {directory}")

    def _create_token(self) -> str:
        from portal.models import Role, User
        from portal.services.accounts import api_token_create, user_create

        user = User.objects.filter(username="alertmanager").first()
        if user is None:
            user = user_create(username="alertmanager", role=Role.ONCALL, tenant=None,
                               password=None)
        _, key = api_token_create(user=user, name="Alertmanager webhook", via="cli")
        return key
