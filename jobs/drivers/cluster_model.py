"""A deterministic, event-driven model of a Slurm cluster, with no I/O (the simulator driver
keeps it in the database; tests drive it directly).

The workload follows the paper's observations on SAKURAONE (section 7.2):
- Observation 2: 76.9% of jobs on one node, 86.4% on four or fewer, 3.3% on 17 or more, and
  those few large jobs hold most of the GPU-occupied time;
- Observation 1: 16.9% of jobs FAIL, early, so they hold ~0.3% of GPU time; cancellations are
  most common among the long training runs and dominate GPU time;
- Observation 4: most jobs end within tens of minutes; the tail grows with size, and 13.6% of
  17-32 node jobs run longer than a week.

Everything random comes from `random.Random` seeded with (seed, stream, index), so job number
N is the same job whatever the calls in between, and the whole run is reproducible. Events
(arrival, completion, node failure, recovery) are processed in time order up to the time asked
for; operator actions (drain, resume) apply at the time they happen. Times are POSIX seconds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from jobs.buckets import SIZE_BUCKETS

GPUS_PER_NODE = 8
DAY = 86_400.0
WEEK = 7 * DAY
MAX_TIME_LIMIT_SECONDS = 14 * DAY  # the partition's MaxTime: longer runs end in TIMEOUT
MAX_CATCH_UP_SECONDS = 7 * DAY  # a simulator idle for longer skips the gap's arrivals
# How long a simulated node takes from "reboot issued" (its jobs ended, the RebootProgram ran)
# until its slurmd registers with a new boot time: about what the test cluster's power cycle
# through sushy-emulator takes (two BMC changes of 1-11 s each).
REBOOT_SECONDS = 20.0

# Share of jobs per size bucket (Observation 2); the paper's cluster never ran above 64 nodes.
BUCKET_WEIGHTS = {
    "1": 0.769,
    "2": 0.055,
    "3-4": 0.040,
    "5-8": 0.050,
    "9-16": 0.053,
    "17-32": 0.028,
    "33-64": 0.005,
}


@dataclass(frozen=True)
class RuntimeModel:
    """Planned runtime of a job in a bucket: log-normal body plus a share running for a week
    or more (Observation 4)."""

    median_seconds: float
    sigma: float
    week_or_longer_share: float = 0.0


RUNTIMES = {
    "1": RuntimeModel(20 * 60, 1.6),
    "2": RuntimeModel(25 * 60, 1.6),
    "3-4": RuntimeModel(40 * 60, 1.6),
    "5-8": RuntimeModel(60 * 60, 1.7),
    "9-16": RuntimeModel(2 * 3600, 1.7, 0.01),
    "17-32": RuntimeModel(8 * 3600, 1.5, 0.17),
    "33-64": RuntimeModel(6 * 3600, 1.5, 0.05),
}

# How jobs end, per bucket: (CANCELLED, FAILED, TIMEOUT); the rest COMPLETE. Large training runs
# are cancelled by their users once the loss converges (Observation 1).
END_STATE_SHARES = {
    "1": (0.22, 0.175, 0.005),
    "2": (0.28, 0.17, 0.005),
    "3-4": (0.35, 0.16, 0.01),
    "5-8": (0.40, 0.15, 0.01),
    "9-16": (0.55, 0.14, 0.01),
    "17-32": (0.80, 0.08, 0.0),
    "33-64": (0.80, 0.08, 0.0),
}

DEFAULT_ACCOUNTS = {
    "sakura": ("tanaka", "suzuki", "sato"),
    "tenant-a": ("alice", "bob"),
    "medllm": ("kato", "ito"),
}
JOB_NAMES = {
    "small": ("eval-harness", "tokenize-corpus", "preprocess-ehr", "jupyter", "sft-debug"),
    "medium": ("sft-llama3-70b", "lora-qwen2.5-72b", "dpo-med", "instruct-ehr2code"),
    "large": ("cpt-llama3.1-70b", "cpt-qwen2.5-72b", "cpt-med-mix"),
}


def _rng(seed: int, stream: str, index: int) -> random.Random:
    # String seeds are hashed with SHA-512 by `random`, identically in every process.
    return random.Random(f"{seed}:{stream}:{index}")  # noqa: S311 - a simulation, not security


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    pick = rng.random() * sum(weights.values())
    for key, weight in weights.items():
        pick -= weight
        if pick < 0:
            return key
    return key


def job_size(rng: random.Random, bucket_label: str) -> int:
    """Nodes for a job in a bucket: mostly the power of two at its top, as people ask."""
    bucket = next(b for b in SIZE_BUCKETS if b.label == bucket_label)
    top = bucket.max_nodes or bucket.min_nodes
    if bucket.min_nodes == top or rng.random() < 0.7:
        return top
    return rng.randint(bucket.min_nodes, top)


def generate_job(seed: int, index: int, accounts: dict[str, tuple[str, ...]]) -> dict:
    """The `index`-th job submitted to a cluster seeded with `seed`: size, planned runtime and
    how it will end. Pure: the same arguments give the same job."""
    rng = _rng(seed, "job", index)
    bucket = _weighted(rng, BUCKET_WEIGHTS)
    nodes = job_size(rng, bucket)
    model = RUNTIMES[bucket]
    if rng.random() < model.week_or_longer_share:
        planned = rng.uniform(1.15 * WEEK, 13 * DAY)
    else:
        planned = rng.lognormvariate(math.log(model.median_seconds), model.sigma)
    planned = max(30.0, planned)
    cancelled, failed, timeout = END_STATE_SHARES[bucket]
    pick = rng.random()
    if planned >= MAX_TIME_LIMIT_SECONDS or pick < timeout:
        state, runtime, exit_code, signal = "TIMEOUT", min(planned, MAX_TIME_LIMIT_SECONDS), 0, 0
    elif pick < timeout + failed:
        # Failures come early (bad config, OOM at start-up): a sliver of the planned time.
        runtime = max(5.0, planned * rng.uniform(0.001, 0.02))
        state, exit_code, signal = "FAILED", rng.choice((1, 1, 1, 2, 127)), 0
    elif pick < timeout + failed + cancelled:
        state, runtime, exit_code, signal = "CANCELLED", planned * rng.uniform(0.6, 1.0), 0, 15
    else:
        state, runtime, exit_code, signal = "COMPLETED", planned, 0, 0
    if bucket in ("1", "2"):
        kind = "small"
    elif bucket in ("3-4", "5-8", "9-16"):
        kind = "medium"
    else:
        kind = "large"
    account = rng.choice(sorted(accounts))
    return {
        "index": index,
        "name": rng.choice(JOB_NAMES[kind]),
        "account": account,
        "user": rng.choice(accounts[account]),
        "partition": "gpu",
        "node_count": nodes,
        "gpus": nodes * GPUS_PER_NODE,
        "runtime": round(runtime, 3),
        "time_limit": int(MAX_TIME_LIMIT_SECONDS // 60),
        "final_state": state,
        "exit_code": exit_code,
        "signal": signal,
    }


class ClusterSimulation:
    """The cluster's state and the rules that move it. `state` is plain JSON-able data."""

    def __init__(self, state: dict):
        self.state = state
        self.finished: list[dict] = []  # jobs that ended during this object's life
        self.changed = False

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        *,
        node_names: list[str],
        seed: int,
        start: float,
        mean_arrival_seconds: float,
        mean_failure_seconds: float,
        max_pending: int,
        accounts: dict[str, tuple[str, ...]] | None = None,
    ) -> ClusterSimulation:
        state = {
            "seed": seed,
            "now": start,
            "mean_arrival_seconds": mean_arrival_seconds,
            "mean_failure_seconds": mean_failure_seconds,
            "max_pending": max_pending,
            "accounts": {k: list(v) for k, v in (accounts or DEFAULT_ACCOUNTS).items()},
            "next_job_id": 1000,
            "arrival_index": 0,
            "next_arrival_at": start,
            "failure_index": 0,
            "next_failure_at": None,
            "controller_up": True,
            "nodes": {},
            "running": {},
            "pending": [],
            "reservations": {},
        }
        simulation = cls(state)
        simulation.set_node_names(node_names)
        simulation._schedule_next_arrival(start)
        simulation._schedule_next_failure(start)
        simulation.changed = True
        return simulation

    def set_node_names(self, names: list[str]) -> None:
        """Follow the inventory: add new nodes idle, forget removed ones (their jobs run on)."""
        nodes = self.state["nodes"]
        for name in names:
            if name not in nodes:
                nodes[name] = _new_node()
                self.changed = True
        for name in [name for name in nodes if name not in set(names)]:
            del nodes[name]
            self.changed = True

    # -- time --------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self.state["now"]

    def advance(self, until: float) -> None:
        """Process every event up to `until`, in time order."""
        state = self.state
        if until <= state["now"]:
            return
        if until - state["now"] > MAX_CATCH_UP_SECONDS:
            state["now"] = until - MAX_CATCH_UP_SECONDS
            state["next_arrival_at"] = max(state["next_arrival_at"], state["now"])
            if state["next_failure_at"] is not None:
                state["next_failure_at"] = max(state["next_failure_at"], state["now"])
            self.changed = True
        while True:
            moment, kind = self._next_event()
            if moment is None or moment > until:
                break
            self.changed = True
            state["now"] = moment
            if kind == "end":
                for job_id, job in sorted(state["running"].items()):
                    if job["start"] + job["runtime"] <= moment:
                        self._finish(job_id, job["final_state"], moment)
            elif kind == "recover":
                for node in state["nodes"].values():
                    if node["recover_at"] is not None and node["recover_at"] <= moment:
                        self._recover(node)
            elif kind == "rebooted":
                for node in state["nodes"].values():
                    done_at = node.get("reboot_done_at")
                    if done_at is not None and done_at <= moment:
                        self._finish_reboot(node, moment)
            elif kind == "reservation":
                self._expire_reservations(moment)
            elif kind == "fail":
                self._fail_random_node(moment)
            elif kind == "arrive":
                self._arrive(moment)
            self._schedule(moment)
        state["now"] = until

    def _next_event(self) -> tuple[float | None, str]:
        state = self.state
        candidates = []
        if state["running"]:
            candidates.append(
                (min(j["start"] + j["runtime"] for j in state["running"].values()), 0, "end")
            )
        recoveries = [n["recover_at"] for n in state["nodes"].values() if n["recover_at"]]
        if recoveries:
            candidates.append((min(recoveries), 1, "recover"))
        reboots = [n["reboot_done_at"] for n in state["nodes"].values() if n.get("reboot_done_at")]
        if reboots:
            candidates.append((min(reboots), 1, "rebooted"))
        if state["next_failure_at"] is not None:
            candidates.append((state["next_failure_at"], 2, "fail"))
        boundaries = self._reservation_boundaries()
        if boundaries:
            candidates.append((min(boundaries), 1, "reservation"))
        candidates.append((state["next_arrival_at"], 3, "arrive"))
        moment, _, kind = min(candidates)
        return moment, kind

    # -- workload ----------------------------------------------------------------------------

    def _schedule_next_arrival(self, after: float) -> None:
        rng = _rng(self.state["seed"], "arrival", self.state["arrival_index"])
        self.state["next_arrival_at"] = after + rng.expovariate(
            1.0 / self.state["mean_arrival_seconds"]
        )

    def _arrive(self, moment: float) -> None:
        state = self.state
        index = state["arrival_index"]
        state["arrival_index"] += 1
        self._schedule_next_arrival(moment)
        if len(state["pending"]) >= state["max_pending"]:
            return  # a long queue: this user comes back later (keeps the queue bounded)
        accounts = {name: tuple(users) for name, users in state["accounts"].items()}
        job = generate_job(state["seed"], index, accounts)
        job.update(job_id=str(state["next_job_id"]), submit=moment, start=None, nodes=[])
        job["reason"] = "Priority"
        state["next_job_id"] += 1
        state["pending"].append(job)

    def _available(self, node: dict) -> bool:
        return not node["drain"] and not node["down"]

    def _schedule(self, moment: float) -> None:
        """Start pending jobs: first come first served, with EASY backfill (a later job may
        jump ahead only if it does not delay the first waiting job). A node in an active
        reservation takes only jobs of the reservation's accounts; a job submitted for given
        nodes (`required_nodes`, like `sbatch --nodelist`) starts when exactly those are free."""
        state = self.state
        nodes = state["nodes"]
        reserved_for = self.reserved_accounts(moment)

        def usable(name: str, job: dict) -> bool:
            accounts = reserved_for.get(name)
            return accounts is None or job["account"] in accounts

        free = sorted(
            name for name, node in nodes.items() if node["job"] is None and self._available(node)
        )
        available = [name for name, node in sorted(nodes.items()) if self._available(node)]
        capacity: dict[str, int] = {}
        shadow: float | None = None
        spare = 0
        still_pending = []
        for job in state["pending"]:
            required = job.get("required_nodes")
            if required:
                if any(name not in available or not usable(name, job) for name in required):
                    job["reason"] = "ReqNodeNotAvail"
                elif all(name in free for name in required):
                    self._start(job, list(required), moment)
                    free = [name for name in free if name not in set(required)]
                    continue
                else:
                    job["reason"] = "Resources"
                still_pending.append(job)
                continue
            size = job["node_count"]
            account = job["account"]
            if account not in capacity:  # per account, as reservations differ by account
                capacity[account] = sum(1 for name in available if usable(name, job))
            if size > capacity[account]:
                job["reason"] = "ReqNodeNotAvail"
                still_pending.append(job)
                continue
            candidates = [name for name in free if usable(name, job)] if reserved_for else free
            if shadow is None:
                if size <= len(candidates):
                    self._start(job, candidates[:size], moment)
                    free = [name for name in free if name not in set(candidates[:size])]
                    continue
                shadow, spare = self._reservation(size, len(candidates))
                job["reason"] = "Resources"
                still_pending.append(job)
                continue
            ends_in_time = moment + job["runtime"] <= shadow
            if size <= len(candidates) and (ends_in_time or size <= spare):
                self._start(job, candidates[:size], moment)
                free = [name for name in free if name not in set(candidates[:size])]
                if not ends_in_time:
                    spare -= size
                continue
            job["reason"] = "Priority"
            still_pending.append(job)
        state["pending"] = still_pending

    def _reservation(self, size: int, free_now: int) -> tuple[float, int]:
        """When the first waiting job can start, and how many nodes will be spare then."""
        nodes = self.state["nodes"]
        releases = sorted(
            (
                job["start"] + job["runtime"],
                sum(1 for name in job["nodes"] if self._available(nodes.get(name, _GONE))),
            )
            for job in self.state["running"].values()
        )
        available = free_now
        for moment, count in releases:
            available += count
            if available >= size:
                return moment, available - size
        return math.inf, 0

    def _start(self, job: dict, names: list[str], moment: float) -> None:
        job.update(start=moment, nodes=list(names), reason="None")
        for name in names:
            self.state["nodes"][name]["job"] = job["job_id"]
        self.state["running"][job["job_id"]] = job

    def _finish(self, job_id: str, final_state: str, moment: float) -> None:
        job = self.state["running"].pop(job_id)
        for name in job["nodes"]:
            node = self.state["nodes"].get(name)
            if node is not None and node["job"] == job_id:
                node["job"] = None
                self._issue_reboot(node, moment)
        exit_code, signal = job["exit_code"], job["signal"]
        if final_state == "NODE_FAIL":
            exit_code, signal = 0, 0
        self.finished.append(
            {
                "job_id": job_id,
                "name": job["name"],
                "user": job["user"],
                "account": job["account"],
                "partition": job["partition"],
                "state": final_state,
                "exit_code": exit_code,
                "signal": signal,
                "submit": job["submit"],
                "start": job["start"],
                "end": moment,
                "elapsed": round(moment - job["start"]),
                "nodes": job["nodes"],
                "gpus": job["gpus"],
            }
        )

    def submit(
        self,
        *,
        nodes: list[str],
        gpus_per_node: int,
        seconds: float,
        exit_code: int = 0,
        name: str = "job",
        account: str = "root",
        user: str = "root",
        partition: str = "gpu",
    ) -> str:
        """Queue a job for exactly `nodes` (`sbatch --nodelist --gres=gpu:N`) that runs
        `seconds`, then exits `exit_code`; the scheduler starts it at once if it can."""
        if not nodes:
            raise ValueError("a job needs at least one node")
        unknown = self.unknown_nodes(nodes)
        if unknown:
            raise ValueError(f"unknown nodes: {', '.join(unknown)}")
        if not 0 <= gpus_per_node <= GPUS_PER_NODE:
            raise ValueError(f"gpus_per_node must be 0..{GPUS_PER_NODE}")
        state = self.state
        job_id = str(state["next_job_id"])
        state["next_job_id"] += 1
        state["pending"].append(
            {
                "job_id": job_id,
                "name": name,
                "account": account,
                "user": user,
                "partition": partition,
                "node_count": len(nodes),
                "required_nodes": list(nodes),
                "gpus_per_node": gpus_per_node,
                "gpus": gpus_per_node * len(nodes),
                "runtime": max(0.0, float(seconds)),
                "time_limit": int(MAX_TIME_LIMIT_SECONDS // 60),
                "final_state": "COMPLETED" if exit_code == 0 else "FAILED",
                "exit_code": int(exit_code),
                "signal": 0,
                "submit": self.now,
                "start": None,
                "nodes": [],
                "reason": "None",
            }
        )
        self._schedule(self.now)
        self.changed = True
        return job_id

    def cancel(self, job_ids: list[str]) -> None:
        """Like `scancel`: running jobs end CANCELLED now, pending ones leave the queue;
        jobs that already ended are ignored."""
        wanted = set(job_ids)
        for job_id in sorted(wanted & set(self.state["running"])):
            job = self.state["running"][job_id]
            job["exit_code"], job["signal"] = 0, 15
            self._finish(job_id, "CANCELLED", self.now)
        cancelled = [job for job in self.state["pending"] if job["job_id"] in wanted]
        for job in cancelled:
            self.finished.append(
                {
                    **{key: job[key] for key in ("job_id", "name", "user", "account")},
                    "partition": job["partition"],
                    "state": "CANCELLED",
                    "exit_code": 0,
                    "signal": 0,
                    "submit": job["submit"],
                    "start": None,
                    "end": self.now,
                    "elapsed": 0,
                    "nodes": [],
                    "gpus": job["gpus"],
                }
            )
        self.state["pending"] = [
            job for job in self.state["pending"] if job["job_id"] not in wanted
        ]
        self._schedule(self.now)
        self.changed = True

    def job_state(self, job_id: str) -> str:
        """RUNNING or PENDING for a job in the queue, "" otherwise (squeue's view)."""
        if job_id in self.state["running"]:
            return "RUNNING"
        if any(job["job_id"] == job_id for job in self.state["pending"]):
            return "PENDING"
        return ""

    # -- reservations ------------------------------------------------------------------------

    def reservations(self) -> dict[str, dict]:
        return self.state.setdefault("reservations", {})

    def reserved_accounts(self, moment: float) -> dict[str, set[str]]:
        """For each node in an active reservation at `moment`, the accounts it may run."""
        reserved: dict[str, set[str]] = {}
        for reservation in self.reservations().values():
            end = reservation["end"]
            if reservation["start"] <= moment and (end is None or moment < end):
                for name in reservation["nodes"]:
                    reserved.setdefault(name, set()).update(reservation["accounts"])
        return reserved

    def busy_for(self, names: list[str], start: float, accounts: list[str]) -> list[str]:
        """Nodes among `names` whose running job (by its time limit) still runs at `start` and
        is not of `accounts`: Slurm refuses such a reservation unless it ignores jobs."""
        busy = []
        for name in names:
            job = self.state["running"].get(self.state["nodes"][name]["job"] or "")
            if job is None or job["account"] in accounts:
                continue
            if job["start"] + job["time_limit"] * 60 > start:
                busy.append(name)
        return busy

    def put_reservation(self, name: str, reservation: dict) -> None:
        """Create or replace the reservation `name` (checked by the caller)."""
        self.reservations()[name] = reservation
        self._schedule(self.now)
        self.changed = True

    def delete_reservation(self, name: str) -> None:
        if self.reservations().pop(name, None) is not None:
            self._schedule(self.now)
            self.changed = True

    def _reservation_boundaries(self) -> list[float]:
        """Future moments where a reservation starts or ends (the scheduler looks again)."""
        now = self.state["now"]
        moments = []
        for reservation in self.state.get("reservations", {}).values():
            if reservation["start"] > now:
                moments.append(reservation["start"])
            if reservation["end"] is not None:
                moments.append(max(reservation["end"], now))
        return moments

    def _expire_reservations(self, moment: float) -> None:
        """Slurm forgets a reservation once its end has passed."""
        reservations = self.reservations()
        ended = [
            name for name, r in reservations.items() if r["end"] is not None and r["end"] <= moment
        ]
        for name in ended:
            del reservations[name]

    # -- node failures -----------------------------------------------------------------------

    def _schedule_next_failure(self, after: float) -> None:
        mean = self.state["mean_failure_seconds"]
        if not mean:
            self.state["next_failure_at"] = None
            return
        rng = _rng(self.state["seed"], "failure", self.state["failure_index"])
        self.state["next_failure_at"] = after + rng.expovariate(1.0 / mean)

    def _fail_random_node(self, moment: float) -> None:
        state = self.state
        rng = _rng(state["seed"], "failed-node", state["failure_index"])
        state["failure_index"] += 1
        self._schedule_next_failure(moment)
        healthy = sorted(name for name, node in state["nodes"].items() if not node["down"])
        if healthy:
            self.fail_node(rng.choice(healthy), moment, recover_after=rng.uniform(600, 3600))

    def fail_node(self, name: str, moment: float, recover_after: float | None = None) -> None:
        """The node stops answering (slurmd dead): down*, "Not responding"; its job ends
        NODE_FAIL. It comes back by itself after `recover_after` seconds, if given."""
        node = self.state["nodes"][name]
        node.update(down=True, not_responding=True)
        node["recover_at"] = moment + recover_after if recover_after else None
        if not node["drain"]:
            node.update(reason="Not responding", reason_set_at=moment, reason_set_by="slurm")
        if node["job"] is not None:
            self._finish(node["job"], "NODE_FAIL", moment)
        self.changed = True

    def recover_node(self, name: str) -> None:
        self._recover(self.state["nodes"][name])
        self._schedule(self.now)
        self.changed = True

    def _recover(self, node: dict) -> None:
        node.update(down=False, not_responding=False, recover_at=None)
        if not node["drain"]:
            node.update(reason="", reason_set_at=None, reason_set_by="")

    # -- operator actions --------------------------------------------------------------------

    def unknown_nodes(self, names) -> list[str]:
        return [name for name in names if name not in self.state["nodes"]]

    def drain(self, names: list[str], reason: str, by: str = "root") -> None:
        """Like `scontrol update State=DRAIN`: a busy node is draining until its job ends."""
        for name in names:
            node = self.state["nodes"][name]
            node.update(drain=True, reason=reason, reason_set_at=self.now, reason_set_by=by)
        self.changed = True

    def request_reboot(self, names: list[str], reason: str, next_state: str) -> None:
        """Like `scontrol reboot ASAP nextstate=...`: the node is drained (no new jobs) and
        flagged REBOOT_REQUESTED until its jobs end; then the reboot is issued (REBOOT_ISSUED,
        DOWN) and REBOOT_SECONDS later the node registers with a new boot time and takes
        `next_state`. A node already asked keeps its request (Slurm skips it too)."""
        for name in names:
            node = self.state["nodes"][name]
            if node.get("reboot_next_state"):
                continue
            node.update(
                drain=True,
                reboot_next_state=next_state,
                reboot_drained=not node["drain"],  # cancel_reboot lifts only its own drain
                reboot_reason=reason,
                reason=f"{reason} : reboot requested",
                reason_set_at=self.now,
                reason_set_by="root",
            )
            if node["job"] is None:
                self._issue_reboot(node, self.now)
        self.changed = True

    def cancel_reboot(self, names: list[str]) -> None:
        """Like `scontrol cancel_reboot`: a requested reboot is withdrawn with the drain it
        added (measured on Slurm 22.05: MIXED+DRAIN+REBOOT_REQUESTED -> MIXED, reason gone);
        an issued one cannot be called back and goes on."""
        for name in names:
            node = self.state["nodes"][name]
            if not node.get("reboot_next_state") or node.get("reboot_done_at") is not None:
                continue
            if node.get("reboot_drained", True):
                node.update(drain=False, reason="", reason_set_at=None, reason_set_by="")
            node.update(reboot_next_state=None, reboot_drained=None)
        self._schedule(self.now)
        self.changed = True

    def _issue_reboot(self, node: dict, moment: float) -> None:
        """The node's jobs have ended: Slurm runs the RebootProgram (REBOOT_ISSUED)."""
        if node.get("reboot_next_state") and node.get("reboot_done_at") is None:
            node["reboot_done_at"] = moment + REBOOT_SECONDS

    def _finish_reboot(self, node: dict, moment: float) -> None:
        """slurmd registered with a boot time after the request: the node takes the next state
        asked for (RESUME: back in service, its reason cleared; DOWN: down, reason kept)."""
        next_state = node.get("reboot_next_state")
        reason = node.get("reboot_reason") or ""
        node.update(boot_time=moment, reboot_next_state=None, reboot_done_at=None,
                    reboot_drained=None, reboot_reason=None)  # fmt: skip
        if next_state == "down":
            # Measured on 22.05 (a drained node, nextstate=DOWN): DOWN, the drain gone, the
            # reboot's reason kept.
            node.update(drain=False, down=True, reason=reason, reason_set_at=moment,
                        reason_set_by="slurm")  # fmt: skip
        else:
            node.update(drain=False, down=False, reason="", reason_set_at=None, reason_set_by="")

    def resume(self, names: list[str]) -> list[str]:
        """Like `scontrol update State=RESUME`. The drain is cleared everywhere; nodes that do
        not answer stay down and are returned (real Slurm says "Invalid node state")."""
        refused = []
        for name in names:
            node = self.state["nodes"][name]
            node["drain"] = False
            if node["not_responding"]:
                refused.append(name)
                continue
            node.update(down=False, reason="", reason_set_at=None, reason_set_by="")
        self._schedule(self.now)
        self.changed = True
        return refused

    # -- reads -------------------------------------------------------------------------------

    def node_rows(self) -> list[tuple[str, dict]]:
        return sorted(self.state["nodes"].items())

    def running_jobs(self) -> list[dict]:
        return sorted(self.state["running"].values(), key=lambda job: int(job["job_id"]))

    def pending_jobs(self) -> list[dict]:
        return list(self.state["pending"])


_GONE = {"drain": True, "down": True}


def _new_node() -> dict:
    return {
        "down": False,
        "not_responding": False,
        "drain": False,
        "reason": "",
        "reason_set_at": None,
        "reason_set_by": "",
        "job": None,
        "recover_at": None,
    }
