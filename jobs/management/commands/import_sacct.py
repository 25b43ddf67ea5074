"""Load a saved `sacct -P` dump into the job history (the format jobs.drivers.sacct reads)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from jobs.drivers.sacct import REQUIRED_FIELDS, SACCT_FORMAT, read_sacct
from jobs.trace_import import TraceRefused, import_trace


class Command(BaseCommand):
    help = (
        f"Import jobs from a `sacct -P -o {SACCT_FORMAT}` dump ('-' reads standard input), "
        "columns in any order by the header's names (needed: "
        f"{', '.join(REQUIRED_FIELDS)}). The whole file is checked first: unknown columns or "
        "states, duplicate job ids, bad hostlists, times out of order and absurd counts are "
        "refused as 'line N, field F: why', and then nothing is written. Importing the same "
        "jobs again is safe."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the sacct -P output, or - for stdin")

    def handle(self, *args, **options):
        name = options["file"]
        try:
            done = import_trace(name, read_sacct)
        except TraceRefused as refused:
            message = "; ".join(refused.problems)
            raise CommandError(f"{name}: {message}. Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {done.jobs} jobs from {name}: {done.result.created} new, "
            f"{done.result.updated} updated, {done.jobs - done.result.total} unchanged."
        ))
