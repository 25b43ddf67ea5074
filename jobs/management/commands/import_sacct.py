"""Load a saved `sacct -P` dump into the job history (the format jobs.drivers.sacct reads)."""

from __future__ import annotations

from functools import partial

from jobs.drivers.sacct import REQUIRED_FIELDS, SACCT_FORMAT, read_sacct
from jobs.management.commands._trace_import import TraceImportCommand


class Command(TraceImportCommand):
    help = (
        f"Import jobs from a `sacct -P -o {SACCT_FORMAT}` dump ('-' reads standard input), "
        "columns in any order by the header's names (needed: "
        f"{', '.join(REQUIRED_FIELDS)}). The whole file is checked first: unknown columns or "
        "states, duplicate job ids, bad hostlists, times out of order and absurd counts are "
        "refused as 'line N, field F: why', and so is a file cut off inside its last line; then "
        "nothing is written. Importing the same "
        "jobs again is safe."
    )

    file_help = "Path of the sacct -P output, or - for stdin"
    # A saved dump ends each line with a newline; one without was cut off.
    reader = staticmethod(partial(read_sacct, whole_lines=True))
