"""Write dcgm-exporter's HPC job mapping files for the simulated nodes from the running jobs
(telemetry/job_mapping.py): what a real site's Slurm prolog and epilog do.

    manage.py telemetry_job_mapping --dir var/telemetry [--loop 5]
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from inventory.models import Node
from telemetry.job_mapping import running_job_assignments, write_job_mapping


class Command(BaseCommand):
    help = "Write the HPC job mapping files of the simulated dcgm-exporters from running jobs."

    def add_arguments(self, parser):
        parser.add_argument("--dir", required=True, type=Path)
        parser.add_argument("--loop", type=float, default=0.0,
                            help="repeat every this many seconds (0: once)")

    def handle(self, *args, **options):
        while True:
            close_old_connections()
            hostnames = list(Node.objects.values_list("hostname", flat=True))
            write_job_mapping(options["dir"], running_job_assignments(), hostnames)
            if options["loop"] <= 0:
                return
            time.sleep(options["loop"])
