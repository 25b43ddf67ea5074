"""Load a job trace from another scheduler, as CSV (jobs/README.md: columns, state mapping)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from jobs.trace_csv import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, read_jobs_csv
from jobs.trace_import import TraceRefused, import_trace


class Command(BaseCommand):
    help = (
        "Import jobs from a CSV trace ('-' reads standard input) with a header naming, in any "
        f"order, {', '.join(REQUIRED_COLUMNS)}, node_count or nodes, and optionally "
        f"{', '.join(name for name in OPTIONAL_COLUMNS if name not in ('node_count', 'nodes'))}."
        " States are mapped to Slurm's (jobs/README.md). The whole file is checked first: any "
        "problem is 'line N, field F: why' and nothing is written. Importing again is safe."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the CSV trace, or - for stdin")

    def handle(self, *args, **options):
        name = options["file"]
        try:
            done = import_trace(name, read_jobs_csv)
        except TraceRefused as refused:
            message = "; ".join(refused.problems)
            raise CommandError(f"{name}: {message}. Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {done.jobs} jobs from {name}: {done.result.created} new, "
            f"{done.result.updated} updated, {done.jobs - done.result.total} unchanged."
        ))
