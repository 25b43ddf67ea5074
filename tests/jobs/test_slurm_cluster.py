"""Smoke tests of the real Slurm 22.05 test cluster that scripts/slurm-up brings up.

Run: .venv/bin/python -m pytest tests/jobs/test_slurm_cluster.py -q -m slurm
(with -p no:django also pass --noconftest: tests/conftest.py imports Django/DRF at import time).
Needs root (the scripts install packages, mknod fake GPUs, run the daemons) and MariaDB on
127.0.0.1:3306. Starts 16 nodes unless a cluster is already up; a cluster this module started
is stopped at the end unless SLURM_TEST_KEEP_CLUSTER=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.jobs import slurm_cluster

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 120  # seconds for a job to reach its final state in accounting


@pytest.fixture(scope="session")
def slurm_info():
    if os.geteuid() != 0:
        pytest.fail("the Slurm test cluster needs root (apt-get, mknod, SlurmUser=root)")
    was_running = slurm_cluster.controller_running()
    # The same size as every other real-Slurm test asks for: the first one to start it decides.
    info = slurm_cluster.ensure_slurm_cluster(nodes=slurm_cluster.TEST_NODES)
    if info["nodes"] < slurm_cluster.MIN_TEST_NODES:
        pytest.fail(f"a {info['nodes']}-node cluster is up; the suite needs "
                    f"{slurm_cluster.MIN_TEST_NODES}: run scripts/slurm-down first")
    yield info
    if not was_running and os.environ.get("SLURM_TEST_KEEP_CLUSTER") != "1":
        slurm_cluster.stop_slurm_cluster()


@pytest.fixture(scope="session")
def run(slurm_info):
    """run(*argv, check=True) -> CompletedProcess, with SLURM_CONF of the test cluster."""
    env = slurm_cluster.slurm_env(slurm_info)

    def _run(*argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            list(argv), env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            pytest.fail(
                f"{argv} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    return _run


def node_names(info: dict) -> list[str]:
    return [f"gpu{i:03d}" for i in range(1, info["nodes"] + 1)]


def sinfo_nodes(run) -> dict[str, dict]:
    data = json.loads(run("sinfo", "--json").stdout)
    return {node["name"]: node for node in data["nodes"]}


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def sacct_final_row(run, job_id: str) -> dict[str, str]:
    """Wait until accounting has the job's allocation row in a final state; return it."""
    fields = ["JobID", "State", "ExitCode", "AllocTRES"]

    def final_row():
        out = run("sacct", "-P", "-n", "-j", job_id, "-o", ",".join(fields)).stdout
        for line in out.splitlines():
            row = dict(zip(fields, line.split("|"), strict=True))
            if row["JobID"] == job_id and row["State"].split()[0] not in (
                "PENDING",
                "RUNNING",
                "COMPLETING",
            ):
                return row
        return None

    return wait_for(final_row, JOB_TIMEOUT, f"job {job_id} to finish in sacct")


def submit(run, tmp_path, *args: str) -> str:
    """sbatch with output and working directory in tmp_path (never the repository)."""
    out = run(
        "sbatch",
        "--parsable",
        f"--chdir={tmp_path}",
        f"--output={tmp_path}/slurm-%j.out",
        *args,
    ).stdout.strip()
    job_id = out.split(";")[0]  # --parsable prints "jobid[;cluster]"
    assert job_id.isdigit(), out
    return job_id


def test_sinfo_json_lists_every_configured_node(slurm_info, run):
    nodes = sinfo_nodes(run)

    assert sorted(nodes) == node_names(slurm_info)
    for name, node in nodes.items():
        assert node["gres"] == "gpu:8", name
        assert node["partitions"] == [slurm_info["partition"]], name
        assert "gres/gpu=8" in node["tres"], name


def test_drain_shows_reason_and_resume_clears_it(run):
    run("scontrol", "update", "NodeName=gpu005", "State=DRAIN", "Reason=smoke test")
    try:
        node = sinfo_nodes(run)["gpu005"]
        assert "DRAIN" in node["state_flags"]
        assert node["reason"] == "smoke test"
        assert run("sinfo", "-h", "-N", "-n", "gpu005", "-o", "%t|%E").stdout.strip() == (
            "drain|smoke test"
        )
    finally:
        run("scontrol", "update", "NodeName=gpu005", "State=RESUME")

    node = sinfo_nodes(run)["gpu005"]
    assert "DRAIN" not in node["state_flags"]
    assert node["reason"] == ""
    # RESUME marks the node not responding and pings it: "idle*" until slurmd answers.
    wait_for(
        lambda: run("sinfo", "-h", "-N", "-n", "gpu005", "-o", "%t").stdout.strip() == "idle",
        timeout=30,
        what="gpu005 to be idle after RESUME",
    )


def test_two_node_gpu_job_completes_and_is_accounted(run, tmp_path):
    job_id = submit(run, tmp_path, "--wrap", "sleep 2", "-N", "2", "--gres=gpu:8")

    row = sacct_final_row(run, job_id)

    assert row["State"] == "COMPLETED", row
    assert row["ExitCode"] == "0:0", row
    tres = dict(item.split("=", 1) for item in row["AllocTRES"].split(","))
    assert tres["gres/gpu"] == "16", row
    assert tres["node"] == "2", row


def test_failing_job_is_failed_with_its_exit_code(run, tmp_path):
    job_id = submit(run, tmp_path, "--wrap", "exit 3")

    row = sacct_final_row(run, job_id)

    assert row["State"] == "FAILED", row
    assert row["ExitCode"] == "3:0", row


def rest_get(info: dict, path: str, headers: dict[str, str]):
    """GET on slurmrestd; the URL is always http://127.0.0.1:6820 from slurm-up."""
    url = info["slurmrestd_url"] + path
    assert url.startswith("http://")
    request = urllib.request.Request(url, headers=headers)
    return urllib.request.urlopen(request, timeout=30)


def test_slurmrestd_lists_nodes_with_a_jwt(slurm_info):
    token = slurm_cluster.slurmrestd_token(slurm_info, username="slurmrest", lifespan=600)
    headers = {"X-SLURM-USER-NAME": "slurmrest", "X-SLURM-USER-TOKEN": token}

    with rest_get(slurm_info, "/slurm/v0.0.38/nodes", headers) as response:
        assert response.status == 200
        body = json.load(response)

    assert body["errors"] == []
    assert sorted(node["name"] for node in body["nodes"]) == node_names(slurm_info)
    gpu005 = next(node for node in body["nodes"] if node["name"] == "gpu005")
    assert gpu005["gres"] == "gpu:8"


def test_slurmrestd_rejects_a_request_without_token(slurm_info):
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        rest_get(slurm_info, "/slurm/v0.0.38/nodes", {"X-SLURM-USER-NAME": "slurmrest"})
    assert excinfo.value.code == 401


def test_controller_stop_and_start(slurm_info, run):
    """Last in this module: the controller is down for a few seconds."""
    slurm_cluster.stop_controller()
    try:
        assert not slurm_cluster.controller_running()
        down = run("sinfo", "-h", check=False)
        assert down.returncode != 0
        assert "Unable to contact slurm controller" in down.stderr
    finally:
        info = slurm_cluster.start_controller()

    assert info["pids"]["slurmctld"] is not None
    assert slurm_cluster.controller_running()
    nodes = sinfo_nodes(run)
    assert sorted(nodes) == node_names(slurm_info)
    # start_controller waits until every node has re-registered: none unknown or unresponsive.
    for name, node in nodes.items():
        assert node["state"] != "unknown", name
        assert "NOT_RESPONDING" not in node["state_flags"], name
