"""Readiness of the Slurm controller, asked through the configured driver (portal/health.py)."""

from __future__ import annotations

import copy

from jobs.drivers.base import SlurmError, get_slurm_driver
from jobs.drivers.simulator import SimulatorDriver

# /readyz and the dashboard wait for the answer: a controller that does not answer in this
# long counts as unreachable (a stopped slurmctld makes scontrol retry for ~10 s by itself).
READINESS_TIMEOUT_SECONDS = 3.0


def check_slurm_controller() -> str | None:
    """None when slurmctld answers a ping, else what is wrong, naming the controller."""
    driver = get_slurm_driver()
    if isinstance(driver, SimulatorDriver):
        return None  # the simulated cluster lives in the database, checked on its own
    if hasattr(driver, "timeout"):
        # Both real drivers bound each command/request by `timeout`; a copy keeps the Actions'
        # longer patience untouched.
        driver = copy.copy(driver)
        driver.timeout = min(driver.timeout, READINESS_TIMEOUT_SECONDS)
    try:
        driver.ping()
    except SlurmError as error:
        return f"slurm controller unreachable: {error}"
    return None
