"""The real single-host Slurm 22.05 test cluster, driven through scripts/slurm-up and slurm-down.

    info = ensure_slurm_cluster(nodes=16)   # starts it, or returns the running one
    subprocess.run(["sinfo", "--json"], env=slurm_env(info), ...)

Every Slurm command needs SLURM_CONF=<state_dir>/slurm.conf; slurm_env() adds it. The state
directory is ${SLURM_TEST_DIR:-/tmp/portal-slurm}. The scripts need root (see their headers).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from inventory.hostlist import compress_hostlist
from tests.jobs.driver_contract import ContractCluster, ObservedNode

REPO_ROOT = Path(__file__).resolve().parents[2]
SLURM_UP = REPO_ROOT / "scripts" / "slurm-up"
SLURM_DOWN = REPO_ROOT / "scripts" / "slurm-down"
DEFAULT_NODES = 100
# Cold start with package installation: ~1.5 min install plus ~0.5 min for 100 nodes.
SCRIPT_TIMEOUT = 900


class SlurmClusterError(RuntimeError):
    """A cluster script failed; the message carries the tail of its stderr (it tails logs)."""


def state_dir() -> Path:
    return Path(os.environ.get("SLURM_TEST_DIR", "/tmp/portal-slurm"))


def _run_script(argv: list[str], extra_env: dict[str, str] | None = None) -> str:
    env = {**os.environ, **(extra_env or {})}
    proc = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT, check=False
    )
    if proc.returncode != 0:
        raise SlurmClusterError(
            f"{' '.join(argv)} exited {proc.returncode}\n--- stderr (tail) ---\n"
            f"{proc.stderr[-6000:]}"
        )
    return proc.stdout


def _parse_info(stdout: str) -> dict:
    """slurm-up prints one line of JSON as its last line on stdout."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise SlurmClusterError("slurm-up printed nothing on stdout")
    return json.loads(lines[-1])


def ensure_slurm_cluster(nodes: int = DEFAULT_NODES) -> dict:
    """Start the cluster with `nodes` nodes unless it is already up, and describe it.

    A cluster that is already up is returned as it is, whatever its node count: read
    info["nodes"] rather than assuming `nodes`. Keys: state_dir, conf, nodes, cluster,
    partition, slurmrestd_url, and pids: {munged, slurmdbd, slurmctld, slurmrestd: pid,
    slurmd: {node name: pid}} (null for a daemon that is not running).
    """
    return _parse_info(_run_script([str(SLURM_UP)], {"SLURM_TEST_NODES": str(nodes)}))


def slurm_env(info: dict, base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of os.environ (or `base`) with SLURM_CONF pointing at the test cluster."""
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = info["conf"]
    return env


def stop_controller() -> None:
    """Stop only slurmctld (state stays on disk); slurmds, slurmdbd and slurmrestd keep running."""
    _run_script([str(SLURM_DOWN), "--only-ctld"])


def start_controller() -> dict:
    """Start slurmctld again from its saved state (no-op if it runs); returns the cluster info."""
    return _parse_info(_run_script([str(SLURM_UP), "--only-ctld"]))


def stop_slurm_cluster() -> None:
    """Stop every daemon slurm-up started; logs and state stay in the state directory."""
    _run_script([str(SLURM_DOWN)])


def controller_running() -> bool:
    """Whether the slurmctld recorded in the state directory is alive (no Slurm RPC involved)."""
    try:
        pid = int((state_dir() / "run" / "slurmctld.pid").read_text().strip())
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError):
        return False
    return comm == "slurmctld"


def slurmrestd_token(info: dict, username: str = "slurmrest", lifespan: int = 600) -> str:
    """A JWT for slurmrestd from `scontrol token` (needs root or SlurmUser)."""
    out = subprocess.run(
        ["scontrol", "token", f"username={username}", f"lifespan={lifespan}"],
        env=slurm_env(info),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for line in out.splitlines():
        if line.startswith("SLURM_JWT="):
            return line.split("=", 1)[1].strip()
    raise SlurmClusterError(f"no SLURM_JWT in scontrol token output: {out!r}")


# --- The real cluster as the driver contract's hands (tests/jobs/driver_contract.py) ----------

# The model cluster's size. The stories spread over it so that they never share a node (the
# Slurm reboot story on gpu062, the never-returning node gpu063, the window story gpu071-072,
# the repair story gpu081), so a smaller cluster fails them with "Invalid node name": CI
# starts it cold, and whichever test comes first decides its size. Cold start ~14 s, ~540 MB.
TEST_NODES = 100
MIN_TEST_NODES = TEST_NODES
_session: dict = {"cluster": None, "users": 0, "started_here": False}


def acquire_test_cluster() -> RealSlurmCluster:
    """The running test cluster, started (TEST_NODES nodes) if need be. Pair with
    release_test_cluster(); the last release stops a cluster this process started, unless
    SLURM_TEST_KEEP_CLUSTER=1."""
    import pytest

    if os.geteuid() != 0:
        pytest.fail("the Slurm test cluster needs root (apt-get, mknod, SlurmUser=root)")
    if _session["cluster"] is None:
        _session["started_here"] = not controller_running()
        info = ensure_slurm_cluster(nodes=TEST_NODES)
        if info["nodes"] < MIN_TEST_NODES:
            pytest.fail(
                f"a {info['nodes']}-node test cluster is up; these tests need {MIN_TEST_NODES}: "
                "run scripts/slurm-down first"
            )
        _session["cluster"] = RealSlurmCluster(info)
    _session["users"] += 1
    return _session["cluster"]


def release_test_cluster() -> None:
    _session["users"] -= 1
    if _session["users"] > 0 or _session["cluster"] is None:
        return
    _session["cluster"] = None
    if _session["started_here"] and os.environ.get("SLURM_TEST_KEEP_CLUSTER") != "1":
        stop_slurm_cluster()


class RealSlurmCluster(ContractCluster):
    """ContractCluster for the real test cluster: everything through the Slurm CLI directly,
    never through a portal driver, so a driver is checked against what Slurm really did."""

    gpus_per_node = 8
    wait_timeout = 60.0

    def __init__(self, info: dict):
        self.info = info
        self.conf = info["conf"]
        self.env = slurm_env(info)
        self.job_dir = state_dir() / "test-jobs"
        self.job_dir.mkdir(parents=True, exist_ok=True)

    def node_names(self) -> list[str]:
        return [f"gpu{i:03d}" for i in range(1, self.info["nodes"] + 1)]

    def run(
        self, *argv: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise SlurmClusterError(
                f"{argv} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    def submit_job(
        self,
        *,
        nodes,
        gpus_per_node: int,
        seconds: float,
        exit_code: int = 0,
        name: str = "contract",
    ) -> str:
        out = self.run(
            "sbatch",
            "--parsable",
            f"--chdir={self.job_dir}",
            f"--output={self.job_dir}/slurm-%j.out",
            f"--job-name={name}",
            f"--nodes={len(nodes)}",
            f"--nodelist={compress_hostlist(nodes)}",
            f"--gres=gpu:{gpus_per_node}",
            "--wrap",
            f"sleep {seconds:g}; exit {int(exit_code)}",
        ).stdout.strip()
        job_id = out.split(";")[0]
        if not job_id.isdigit():
            raise SlurmClusterError(f"sbatch printed {out!r}")
        return job_id

    def job_state(self, job_id: str) -> str:
        return self.run("squeue", "-h", "-j", job_id, "-o", "%T", check=False).stdout.strip()

    def cancel_jobs(self, job_ids) -> None:
        if job_ids:
            self.run("scancel", *job_ids, check=False)

    def sinfo_nodes(self) -> dict[str, dict]:
        return {
            node["name"]: node for node in json.loads(self.run("sinfo", "--json").stdout)["nodes"]
        }

    def observe_node(self, name: str):
        node = self.sinfo_nodes()[name]
        return ObservedNode(frozenset(node["state_flags"]), node["reason"])

    def restore_nodes(self, names) -> None:
        nodes = self.sinfo_nodes()
        drained = [name for name in names if "DRAIN" in nodes[name]["state_flags"]]
        if drained:
            # 22.05 may exit 1 ("Invalid node state") and still resume: not checked here.
            self.run(
                "scontrol",
                "update",
                f"NodeName={compress_hostlist(drained)}",
                "State=RESUME",
                check=False,
            )

    @contextmanager
    def controller_down(self) -> Iterator[None]:
        stop_controller()
        try:
            yield
        finally:
            start_controller()
