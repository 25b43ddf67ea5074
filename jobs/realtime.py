"""Websocket groups the jobs app publishes to, checked with the selectors the API uses.

- "node.<id>": Slurm state changes of one node, for whoever may see that node;
- "jobs": every job change, for the roles that read jobs (events are marked with the job's
  tenant, so a tenant admin receives only their own);
- "job.<id>": one job, for whoever may see it.
"""

from __future__ import annotations

from inventory.selectors import visible_nodes
from jobs.selectors import visible_jobs
from portal.realtime import register_group_access
from portal.roles import may


def _object_id(group: str) -> int | None:
    _, _, suffix = group.partition(".")
    return int(suffix) if suffix.isdigit() else None


def may_follow_node(user, group: str) -> bool:
    node_id = _object_id(group)
    return node_id is not None and visible_nodes(user=user).filter(pk=node_id).exists()


def may_follow_jobs(user, group: str) -> bool:
    return group == "jobs" and may(user, "read_jobs")


def may_follow_job(user, group: str) -> bool:
    job_id = _object_id(group)
    return job_id is not None and visible_jobs(user=user).filter(pk=job_id).exists()


def register_jobs_groups() -> None:
    register_group_access("node", may_follow_node)
    register_group_access("jobs", may_follow_jobs)
    register_group_access("job", may_follow_job)
