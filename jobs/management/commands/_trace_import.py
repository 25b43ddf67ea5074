"""What `import_sacct` and `import_jobs_csv` share: a file (or stdin) checked whole, then written
(jobs/trace_import.py), and the same refusal and summary. Not a command itself (the name starts
with an underscore)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from jobs.trace_import import TraceRefused, import_trace


class TraceImportCommand(BaseCommand):
    file_help = ""
    reader = None  # staticmethod(read_...): lines -> jobs, raising InvalidInput


    def add_arguments(self, parser):
        parser.add_argument("file", help=self.file_help)

    def handle(self, *args, **options):
        name = options["file"]
        try:
            done = import_trace(name, self.reader)
        except TraceRefused as refused:
            message = "; ".join(refused.problems)
            raise CommandError(f"{name}: {message}. Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {done.jobs} jobs from {name}: {done.result.created} new, "
            f"{done.result.updated} updated, {done.jobs - done.result.total} unchanged."
        ))
