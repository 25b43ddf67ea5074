"""What `import_sacct` and `import_jobs_csv` share: a file (or stdin) checked whole, then written
(jobs/trace_import.py), and the same refusal and summary. Not a command itself (the name starts
with an underscore)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from jobs.trace_import import TraceRefused, import_trace, parse_taken_at


class TraceImportCommand(BaseCommand):
    file_help = ""
    reader = None  # staticmethod(read_...): lines -> jobs, raising InvalidInput


    def add_arguments(self, parser):
        parser.add_argument("file", help=self.file_help)
        parser.add_argument(
            "--taken-at", metavar="ISO8601",
            help="When the trace was taken (no zone: UTC): its running jobs are counted up to "
                 "then until squeue lists them again. Default: the latest time the file shows "
                 "(a running job's start + Elapsed, or any submit, start or end time)",
        )

    def handle(self, *args, **options):
        name = options["file"]
        try:
            taken_at = options["taken_at"] and parse_taken_at(options["taken_at"])
            done = import_trace(name, self.reader, taken_at=taken_at or None)
        except TraceRefused as refused:
            message = "; ".join(refused.problems)
            raise CommandError(f"{name}: {message}. Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {done.jobs} jobs from {name}: {done.result.created} new, "
            f"{done.result.updated} updated, {done.jobs - done.result.total} unchanged."
        ))
        if done.running:
            how = "as given" if done.taken_at_given else "the latest time the file shows"
            self.stdout.write(
                f"{done.running} running job{'s' if done.running != 1 else ''} counted up to "
                f"{done.taken_at.isoformat()} ({how}), when the trace was taken, until squeue "
                "lists them again."
            )
