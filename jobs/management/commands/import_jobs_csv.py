"""Load a job trace from another scheduler, as CSV (jobs/README.md: columns, state mapping)."""

from __future__ import annotations

from jobs.management.commands._trace_import import TraceImportCommand
from jobs.trace_csv import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, read_jobs_csv


class Command(TraceImportCommand):
    help = (
        "Import jobs from a CSV trace ('-' reads standard input) with a header naming, in any "
        f"order, {', '.join(REQUIRED_COLUMNS)}, node_count or nodes, and optionally "
        f"{', '.join(name for name in OPTIONAL_COLUMNS if name not in ('node_count', 'nodes'))}."
        " States are mapped to Slurm's (jobs/README.md). The whole file is checked first: any "
        "problem is 'line N, field F: why' and nothing is written. Importing again is safe."
    )

    file_help = "Path of the CSV trace, or - for stdin"
    reader = staticmethod(read_jobs_csv)
