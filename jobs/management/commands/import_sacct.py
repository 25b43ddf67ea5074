"""Load a saved `sacct -P` dump into the job history (the format jobs.drivers.sacct reads)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from jobs.drivers.sacct import SACCT_FORMAT, parse_sacct
from jobs.sync import import_finished_jobs
from portal.errors import InvalidInput


class Command(BaseCommand):
    help = (
        "Import finished jobs from a `sacct -P -o "
        f"{SACCT_FORMAT}` dump ('-' reads standard input). The whole file is checked first: "
        "a bad line names itself and nothing is written. Importing the same jobs again is safe."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the sacct -P output, or - for stdin")

    def handle(self, *args, **options):
        text = self._read(options["file"])
        try:
            finished = parse_sacct(text)
        except InvalidInput as error:
            problems = error.detail if isinstance(error.detail, dict) else {"file": [error.detail]}
            lines = "; ".join(f"{msg}" for messages in problems.values() for msg in messages)
            raise CommandError(f"{options['file']}: {lines}. Nothing was imported.") from None
        with transaction.atomic():
            result = import_finished_jobs(finished)
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {len(finished)} jobs from {options['file']}: "
                f"{result.created} new, {result.updated} updated, "
                f"{len(finished) - result.total} unchanged."
            )
        )

    @staticmethod
    def _read(name: str) -> str:
        if name == "-":
            return sys.stdin.read()
        path = Path(name)
        if not path.is_file():
            raise CommandError(f"{name}: no such file")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise CommandError(
                f"{name}: not UTF-8 text (byte {error.start}); is it really sacct -P output?"
            ) from None
