"""Faults around a drain on the real Slurm test cluster (tests/jobs/slurm_cluster.py): the worker
SIGKILLed in the middle of one, and the controller stopped for a minute.

Needs root, MariaDB, PostgreSQL and Redis, like `make test`.
"""

from __future__ import annotations

import shutil
import stat
import time
from pathlib import Path

import pytest

from jobs.services import request_drain
from portal.models import Action, ActionAttempt, ActionStatus, Role
from tests.chaos.support import http, session_cookie_for, tally
from tests.jobs import slurm_cluster
from tests.jobs.slurm_fixtures import sinfo_state_and_reason
from tests.support import wait_for

pytest_plugins = ["tests.jobs.slurm_fixtures"]  # real_slurm, fleet
pytestmark = [
    pytest.mark.chaos,
    pytest.mark.slurm,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

CONTROLLER_OUTAGE_SECONDS = 60


@pytest.fixture(autouse=True)
def _undrain_afterwards(real_slurm):
    yield
    if slurm_cluster.controller_running():
        real_slurm.restore_nodes(real_slurm.node_names())


def cli_driver_env(real_slurm, bin_dir: str = "") -> dict[str, str]:
    return {
        "SLURM_DRIVER": "jobs.drivers.cli.ScontrolDriver",
        "SLURM_CONF": real_slurm.conf,
        "SLURM_BIN_DIR": bin_dir,
        # Each command gives up after 5 s, so a drain attempt's lease is 2 x 5 + 10 = 20 s.
        "SLURM_COMMAND_TIMEOUT": "5",
        "SLURM_REST_TIMEOUT": "5",
    }


def attempt_log(action: Action) -> list[tuple[str, str]]:
    return list(
        ActionAttempt.objects.filter(action=action)
        .order_by("number")
        .values_list("outcome", "worker")
    )


def scontrol_updates(log: str, node: str) -> int:
    return sum(
        1
        for line in log.splitlines()
        if "slurm command: scontrol update" in line and f"NodeName={node} " in line
    )


@pytest.fixture
def lingering_scontrol(tmp_path) -> Path:
    """A SLURM_BIN_DIR whose scontrol lingers after an update it has applied, while a `linger`
    file exists: a worker killed then has changed Slurm but not recorded it, the hardest
    moment for "exactly once"."""
    bin_dir = tmp_path / "slurm-bin"
    bin_dir.mkdir()
    for program in ("sinfo", "squeue", "sacct"):
        (bin_dir / program).symlink_to(shutil.which(program))
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(
        "#!/bin/sh\n"
        f'"{shutil.which("scontrol")}" "$@"\n'
        "status=$?\n"
        f'if [ "$1" = update ] && [ -e "{bin_dir}/linger" ]; then\n'
        f'  touch "{bin_dir}/applied"; sleep 4\n'
        "fi\n"
        "exit $status\n"
    )
    scontrol.chmod(scontrol.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "linger").touch()
    return bin_dir


def test_worker_sigkilled_during_a_drain_drains_exactly_once(
    stack, fleet, real_slurm, lingering_scontrol
):
    stack.env.update(
        {
            **cli_driver_env(real_slurm, str(lingering_scontrol)),
            "ACTION_SWEEP_INTERVAL": "1",
            # Redis hands an unacknowledged message to the next worker after this long.
            "CELERY_VISIBILITY_TIMEOUT": "10",
        }
    )
    first = stack.start_worker("worker1")
    stack.start_beat()

    action, _ = request_drain(nodes=[fleet["gpu013"]], reason="chaos: worker killed mid-drain")
    wait_for((lingering_scontrol / "applied").exists, 30, "scontrol update to be applied", 0.02)
    first.kill()  # SIGKILL the process group: the worker never records the outcome
    (lingering_scontrol / "linger").unlink()

    action.refresh_from_db()
    assert action.status == ActionStatus.RUNNING  # claimed by a worker that is gone
    assert sinfo_state_and_reason(real_slurm, "gpu013") == ("drain", action.reason)

    second = stack.start_worker("worker2")
    # The lease (20 s) runs out; the sweeper (or the re-delivered message) hands it to worker2.
    wait_for(
        lambda: Action.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED,
        60,
        "worker2 to finish the drain",
    )
    attempts = attempt_log(action)
    assert [outcome for outcome, _ in attempts] == ["abandoned", "succeeded"]
    assert attempts[0][1].startswith("worker1@") and attempts[1][1].startswith("worker2@")
    assert sinfo_state_and_reason(real_slurm, "gpu013") == ("drain", action.reason)
    # worker2 drained again (idempotent) and recorded it once.
    assert scontrol_updates(second.log(), "gpu013") == 1
    result = tally("worker SIGKILLed during a drain", [action.pk])
    assert (result.done, result.lost, result.done_twice) == (1, 0, 0)


def test_the_process_that_queued_a_drain_sigkilled_mid_drain_leaves_it_to_a_worker(
    stack, fleet, real_slurm, lingering_scontrol
):
    """A drain runs in the process that queued it (a web server), not on a worker: that
    process dying under it must lose nothing either. Its lease runs out and the sweeper hands
    the Action to a worker, which drains again (idempotent) and records it once."""
    stack.env.update({**cli_driver_env(real_slurm, str(lingering_scontrol)),
                      "ACTION_SWEEP_INTERVAL": "1"})
    requester = stack.start_requester()
    action_id = requester.drain("gpu015", "chaos: requesting process killed mid-drain")
    wait_for((lingering_scontrol / "applied").exists, 30, "scontrol update to be applied", 0.02)
    requester.kill()
    (lingering_scontrol / "linger").unlink()

    action = Action.objects.get(pk=action_id)
    assert action.status == ActionStatus.RUNNING  # claimed by a process that is gone
    assert [outcome for outcome, _ in attempt_log(action)] == ["running"]
    assert scontrol_updates(requester.log(), "gpu015") == 0  # it never saw scontrol return

    worker = stack.start_worker("worker2")
    stack.start_beat()
    wait_for(lambda: Action.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED, 60,
             "a worker to finish the drain")
    attempts = attempt_log(action)
    assert [outcome for outcome, _ in attempts] == ["abandoned", "succeeded"]
    assert attempts[0][1].endswith("(where queued)") and attempts[1][1].startswith("worker2@")
    assert sinfo_state_and_reason(real_slurm, "gpu015") == ("drain", action.reason)
    assert scontrol_updates(worker.log(), "gpu015") == 1
    result = tally("requesting process SIGKILLed during its drain", [action.pk])
    assert (result.done, result.lost, result.done_twice) == (1, 0, 0)


def dashboard_services(url: str, session_key: str) -> str:
    import urllib.request

    request = urllib.request.Request(url + "/")
    request.add_header("Cookie", f"sessionid={session_key}")
    with urllib.request.urlopen(request, timeout=30) as response:
        html = response.read().decode()
    start = html.index('id="services-health"')
    return html[start : html.index("</section>", start)]


def test_controller_stopped_for_a_minute_drain_retries_and_readiness_names_it(
    stack, fleet, real_slurm, make_user, monkeypatch
):
    stack.env.update(
        {
            **cli_driver_env(real_slurm),
            # Production's backoff shape, shortened: a minute of outage is a few attempts.
            "ACTION_RETRY_BASE_SECONDS": "5",
            "ACTION_RETRY_MAX_SECONDS": "20",
        }
    )
    worker = stack.start_worker()
    server = stack.start_server(monkeypatch)
    session_key = session_cookie_for(make_user(Role.OPERATOR))
    assert http("GET", server.url + "/readyz").status == 200

    stopped_at = time.monotonic()
    slurm_cluster.stop_controller()
    try:
        action, _ = request_drain(nodes=[fleet["gpu014"]], reason="chaos: controller outage")

        ready = http("GET", server.url + "/readyz")
        assert ready.status == 503, ready.body
        assert "slurm" in ready.body["down"]
        assert ready.body["checks"]["slurm"].startswith("slurm controller unreachable")
        assert ready.seconds < 5  # a short timeout, not scontrol's own retries
        card = dashboard_services(server.url, session_key)
        assert "slurm" in card and "slurm controller unreachable" in card

        wait_for(
            lambda: (
                ActionAttempt.Outcome.RETRY
                in ActionAttempt.objects.filter(action=action).values_list("outcome", flat=True)
            ),
            30,
            "a transient failure while the controller is down",
        )
        action.refresh_from_db()
        assert action.status in (ActionStatus.QUEUED, ActionStatus.RUNNING)
        assert "unreachable" in action.last_error.lower()
        time.sleep(max(0.0, CONTROLLER_OUTAGE_SECONDS - (time.monotonic() - stopped_at)))
        action.refresh_from_db()
        assert action.status != ActionStatus.FAILED, action.last_error
    finally:
        slurm_cluster.start_controller()

    wait_for(
        lambda: Action.objects.get(pk=action.pk).status == ActionStatus.SUCCEEDED,
        60,
        "the drain once the controller is back",
    )
    outcomes = [outcome for outcome, _ in attempt_log(action)]
    assert outcomes[-1] == "succeeded" and set(outcomes[:-1]) == {"retry"}
    assert len(outcomes) >= 2
    assert sinfo_state_and_reason(real_slurm, "gpu014") == ("drain", "chaos: controller outage")
    assert scontrol_updates(worker.log(), "gpu014") == 1
    recovered = http("GET", server.url + "/readyz")
    assert recovered.status == 200 and recovered.body["checks"]["slurm"] == "ok", recovered.body
    assert "slurm controller unreachable" not in dashboard_services(server.url, session_key)
    result = tally(f"slurmctld stopped {CONTROLLER_OUTAGE_SECONDS} s during a drain", [action.pk])
    assert (result.done, result.lost, result.done_twice) == (1, 0, 0)
    print(f"CHAOS | drain attempts across the outage: {outcomes}")
