"""manage.py netbox_import --url URL --token TOKEN [--dry-run] [--site SLUG] [--role SLUG=KIND]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.netbox.client import NetboxError
from inventory.netbox.command_support import add_connection_arguments, role_map_from
from inventory.netbox.importer import NetboxImportError, netbox_import


class Command(BaseCommand):
    help = (
        "Import NetBox devices, interfaces and cables as nodes, NICs, switches, ports and "
        "cables. Idempotent and atomic; --dry-run prints the diff and writes nothing."
    )

    def add_arguments(self, parser):
        add_connection_arguments(parser)
        parser.add_argument("--site", help="Only devices of this NetBox site (slug)")

    def handle(self, *args, **options):
        try:
            result = netbox_import(
                url=options["url"],
                token=options["token"],
                site=options["site"],
                role_map=role_map_from(options),
                dry_run=options["dry_run"],
            )
        except NetboxError as exc:
            raise CommandError(f"NetBox at {options['url']}: {exc}") from exc
        except NetboxImportError as exc:
            for problem in exc.problems:
                self.stderr.write(self.style.ERROR(f"  {problem}"))
            raise CommandError(
                f"{len(exc.problems)} problem(s) in NetBox data; nothing changed"
            ) from exc
        plan = result.plan
        for change in plan.changes:
            self.stdout.write(change.line())
        verb = "Would import" if result.dry_run else "Imported"
        self.stdout.write(f"{verb} from NetBox {result.netbox_version}:")
        self.stdout.write(f"  {'':<7} {'create':>7} {'update':>7} {'delete-candidate':>17}")
        for label, counts in plan.counts().items():
            self.stdout.write(
                f"  {label:<7} {counts['create']:>7} {counts['update']:>7} "
                f"{counts['delete-candidate']:>17}"
            )
        if not plan.changed:
            self.stdout.write("Nothing to change: the inventory matches NetBox.")
