"""Are drained nodes empty yet? Read from Slurm itself, at the moment of asking.

A drain that succeeded is not an empty node: `scontrol update state=drain` returns at once and
the jobs on the node run on ("draining"). Whoever must wait for the nodes to be empty before
doing something disruptive (a maintenance shutting switch ports) asks here, through the
configured Slurm driver rather than the portal's last sync, so the answer is Slurm's own now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inventory.hostlist import compress_hostlist
from jobs.drivers.base import SlurmNodeState, get_slurm_driver
from jobs.models import RUNNING_STATES

BUSY_NODE_STATES = frozenset({"allocated", "mixed"})


@dataclass(frozen=True)
class JobOnNodes:
    job_id: str
    user: str
    account: str
    state: str
    nodes: tuple[str, ...]  # the job's nodes among those asked about

    def as_dict(self) -> dict:
        return {"job_id": self.job_id, "user": self.user, "account": self.account,
                "state": self.state, "nodes": list(self.nodes)}


@dataclass(frozen=True)
class DrainProgress:
    nodes: tuple[str, ...]
    # Nodes not empty and drained yet, with why: Slurm's word (draining, allocated, idle when
    # someone resumed it, ...) or "not known to Slurm".
    waiting_on: dict[str, str]
    jobs: tuple[JobOnNodes, ...]

    @property
    def empty(self) -> bool:
        return not self.waiting_on and not self.jobs

    def describe(self) -> str:
        """"waiting for 2 jobs (1098, 1100) on 3 nodes (gpu[011-013])", or "all N nodes
        drained, no jobs"."""
        if self.empty:
            return f"all {len(self.nodes)} nodes drained, no jobs"
        nodes = sorted(set(self.waiting_on) | {n for job in self.jobs for n in job.nodes})
        node_words = f"{_count(len(nodes), 'node')} ({compress_hostlist(nodes)})"
        if not self.jobs:
            states = ", ".join(f"{name} {why}" for name, why in sorted(self.waiting_on.items()))
            return f"waiting for {node_words} to be drained: {states}"
        job_ids = ", ".join(job.job_id for job in self.jobs)
        return f"waiting for {_count(len(self.jobs), 'job')} ({job_ids}) on {node_words}"

    def as_dict(self) -> dict:
        return {"waiting_on": dict(sorted(self.waiting_on.items())),
                "jobs": [job.as_dict() for job in self.jobs]}


def drain_progress(names: Sequence[str]) -> DrainProgress:
    """How far the drain of `names` has got, as Slurm says now. Raises the driver's SlurmError
    (SlurmUnavailable when the controller does not answer)."""
    names = sorted(set(names))
    driver = get_slurm_driver()
    states = {state.name: state for state in driver.nodes(names)}
    wanted = set(names)
    jobs = tuple(
        JobOnNodes(job.job_id, job.user, job.account, job.state,
                   tuple(sorted(wanted.intersection(job.node_names))))
        for job in sorted(driver.jobs(), key=lambda job: _job_order(job.job_id))
        if job.state in RUNNING_STATES and wanted.intersection(job.node_names)
    )
    waiting_on = {}
    for name in names:
        state = states.get(name)
        if state is None:
            waiting_on[name] = "not known to Slurm"
        elif not _drained_and_empty(state):
            waiting_on[name] = state.display_state
    return DrainProgress(tuple(names), waiting_on, jobs)


def _drained_and_empty(state: SlurmNodeState) -> bool:
    # A down node runs nothing; any other must carry DRAIN (else new jobs could start on it)
    # and be neither allocated nor still completing a job.
    if state.state == "down":
        return True
    return ("DRAIN" in state.flags and state.state not in BUSY_NODE_STATES
            and "COMPLETING" not in state.flags)


def _job_order(job_id: str) -> tuple[int, str]:
    head = job_id.split("_")[0].split("+")[0]
    return (int(head) if head.isdigit() else 0, job_id)


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"
