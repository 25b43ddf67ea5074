"""manage.py netbox_export --url URL --token TOKEN [--dry-run] [--site SLUG] [--role SLUG=KIND]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.netbox.client import NetboxError
from inventory.netbox.command_support import add_connection_arguments, role_map_from
from inventory.netbox.exporter import NetboxExportError, netbox_export, summarize


class Command(BaseCommand):
    help = (
        "Push nodes, switches, NICs, ports and active cables to NetBox as devices, interfaces "
        "and cables, creating what is missing and updating what differs."
    )

    def add_arguments(self, parser):
        add_connection_arguments(parser)
        parser.add_argument("--site", help="NetBox site (slug) for devices the export creates")

    def handle(self, *args, **options):
        try:
            result = netbox_export(
                url=options["url"],
                token=options["token"],
                site=options["site"],
                role_map=role_map_from(options),
                dry_run=options["dry_run"],
            )
        except NetboxError as exc:
            raise CommandError(f"NetBox at {options['url']}: {exc}") from exc
        except NetboxExportError as exc:
            for problem in exc.problems:
                self.stderr.write(self.style.ERROR(f"  {problem}"))
            raise CommandError(f"{len(exc.problems)} problem(s); nothing sent to NetBox") from exc
        for change in result.changes:
            self.stdout.write(change.line())
        verb = "Would send" if result.dry_run else "Sent"
        summary = ", ".join(
            f"{model}: {counts['create']} create, {counts['update']} update"
            for model, counts in summarize(result.changes).items()
        )
        self.stdout.write(
            f"{verb} to NetBox {result.netbox_version}: {summary or 'nothing, it matches'}"
        )
