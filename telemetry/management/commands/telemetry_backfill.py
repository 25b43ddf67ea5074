"""Give the demo's Prometheus the GPU history of jobs that ran before it started.

    manage.py telemetry_backfill --dir var/telemetry [--days 2] [--step 300]

The simulated exporters only speak from the moment they run, so a freshly started demo would
show Observation 3 over no job. This writes what they would have said for every GPU job that
ran in the last days (the same model: telemetry.exporter.metrics.simulated_utilisation) as
OpenMetrics, and imports it with Prometheus's own backfill tool into the running server's data
directory (`promtool tsdb create-blocks-from openmetrics`; Prometheus 2.42 picks the blocks up
at its next block reload, overlapping blocks allowed by default). Demo only: a real site's
history is its own Prometheus's.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from django.utils import timezone

from jobs.models import Job
from telemetry.exporter.metrics import DCGM_COUNTERS, MODEL_NAME, read_state, simulated_utilisation
from telemetry.job_mapping import GPUS_PER_NODE, running_job_assignments

NAME, _, HELP = DCGM_COUNTERS[0]  # DCGM_FI_DEV_GPU_UTIL


class Command(BaseCommand):
    help = "Backfill the demo Prometheus with the simulated GPU history of recent jobs."

    def add_arguments(self, parser):
        parser.add_argument("--dir", required=True, type=Path, help="scripts/telemetry-up's dir")
        parser.add_argument("--days", type=float, default=2.0)
        parser.add_argument("--step", type=int, default=300, help="seconds between samples")
        parser.add_argument(
            "--sync-jobs", action="store_true",
            help="read Slurm's running and finished jobs first (the demo starts this before its "
                 "web process's first sync, which wrote 0 samples: no job was known yet)",
        )

    def handle(self, *args, **options):
        promtool = shutil.which("promtool")
        if promtool is None:
            raise CommandError("promtool not found: scripts/telemetry-up --install-only")
        directory: Path = options["dir"]
        step = max(15, options["step"])
        if options["sync_jobs"]:
            self._sync_jobs()
        now = timezone.now()
        # Up to the last whole step before now: live scrapes own the present.
        until = now - timedelta(minutes=10)
        since = now - timedelta(days=options["days"])
        spec = read_state(directory).nodes
        jobs = (
            Job.objects.filter(gpus__gt=0, start_time__lt=until, start_time__isnull=False)
            .filter(Q(end_time__isnull=True) | Q(end_time__gt=since))
            .prefetch_related("nodes")
            .order_by("start_time")
        )
        # Running jobs keep the GPUs the live mapping gives them, so their history and their
        # live samples are one series per GPU; finished ones take the lowest indexes.
        live_indexes: dict[tuple[str, str], list[int]] = {}
        for host, gpus in running_job_assignments().items():
            for index, job_ids in gpus.items():
                for job_id in job_ids:
                    live_indexes.setdefault((job_id, host), []).append(index)
        lines = [f"# HELP {NAME} {HELP}", f"# TYPE {NAME} gauge"]
        series = samples = 0
        for job in jobs:
            hosts = [node.hostname for node in job.nodes.all() if node.hostname in spec]
            if not hosts:
                continue
            per_node = max(1, min(GPUS_PER_NODE, job.gpus // len(hosts)))
            first = max(job.start_time, since).timestamp()
            last = min(job.end_time or until, until).timestamp()
            times = [t for t in range(int(first) // step * step + step, int(last), step)]
            if not times:
                continue
            for host in hosts:
                gpus = {gpu["index"]: gpu for gpu in spec[host].get("gpus", [])}
                indexes = live_indexes.get((job.job_id, host)) or range(per_node)
                for index in sorted(indexes):
                    gpu = gpus.get(index, {})
                    # Exactly the live exporter's label set (metrics.render_dcgm) plus the
                    # target labels Prometheus adds.
                    labels = (
                        f'gpu="{index}",UUID="{gpu.get("uuid", "")}",'
                        f'pci_bus_id="{gpu.get("pci_bus_id", "")}",device="nvidia{index}",'
                        f'modelName="{MODEL_NAME}",Hostname="{host}",hpc_job="{job.job_id}",'
                        f'instance="{host}",job="dcgm"'
                    )
                    series += 1
                    for t in times:
                        value = simulated_utilisation(job.job_id, len(hosts), f"{host}/{index}", t)
                        lines.append(f"{NAME}{{{labels}}} {value:g} {t}")
                        samples += 1
        lines.append("# EOF")
        source = directory / "backfill.om"
        source.write_text("\n".join(lines) + "\n")
        result = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(source),
             str(directory / "prometheus-data")],
            capture_output=True, text=True, check=False,
        )
        source.unlink(missing_ok=True)
        if result.returncode != 0:
            raise CommandError(f"promtool failed: {result.stderr.strip()[-2000:]}")
        self.stdout.write(f"telemetry_backfill: {series} GPU series, {samples} samples")

    def _sync_jobs(self) -> None:
        from jobs.drivers.base import SlurmUnavailable
        from jobs.sync import import_accounting, sync_live_jobs

        try:
            live = sync_live_jobs()
            finished = import_accounting()
        except SlurmUnavailable as error:
            raise CommandError(f"Slurm did not answer: {error}") from error
        self.stdout.write(f"telemetry_backfill: jobs synced ({live}; accounting {finished})")
