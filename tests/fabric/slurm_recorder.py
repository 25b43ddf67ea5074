"""A Slurm driver for fabric worker tests: records drains in a file instead of calling Slurm.

The leaf-maintenance flow needs a drain to succeed, and the drained nodes empty, before it
shuts ports; the jobs app's own
tests cover talking to Slurm. Set SLURM_DRIVER=tests.fabric.slurm_recorder.RecordingSlurmDriver
and SLURM_RECORDER_FILE in the worker's environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime

from jobs.drivers.base import SlurmDriver, SlurmNodeState, SlurmNotSupported


class RecordingSlurmDriver(SlurmDriver):
    def ping(self) -> None:
        return None

    def nodes(self, names: Sequence[str] | None = None):
        """The nodes it drained, as drained and empty (the recorder runs no jobs)."""
        drained = set()
        with open(os.environ["SLURM_RECORDER_FILE"], encoding="utf-8") as record:
            for line in record:
                drained.update(json.loads(line).get("drain", []))
        return [SlurmNodeState(name=name, state="idle", flags=("DRAIN",))
                for name in sorted(drained) if names is None or name in names]

    def drain(self, names: Sequence[str], reason: str) -> None:
        with open(os.environ["SLURM_RECORDER_FILE"], "a", encoding="utf-8") as record:
            record.write(json.dumps({"drain": list(names), "reason": reason}) + "\n")

    def resume(self, names: Sequence[str]) -> None:
        raise SlurmNotSupported("the recorder does not resume")

    def jobs(self):
        return []

    def accounting(self, since: datetime, until: datetime | None = None):
        return []
