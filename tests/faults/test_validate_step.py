"""The ticket offers "Validate, then resume" for its drained node (issue 24 item 7), before the
plain resume, through the API and the ticket page; it queues the "slurm.validate" Action with the
site's command (jobs/validation_run.py runs it: tests/jobs/test_validation_run*.py). A node the
node health check drained ("NHC: ...") is NHC's: no validation is offered or accepted."""

from __future__ import annotations

import pytest

from faults.models import FaultTicket
from jobs.validation_run import VALIDATE_ACTION
from portal.models import Action, Role
from tests.faults.test_ticket_steps import drained, fleet, xid_ticket  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def test_the_api_queues_validate_then_resume_for_the_tickets_node(fleet, api_as, settings):  # noqa: F811
    settings.FAULTS_VALIDATION_COMMAND = "dcgmi diag -r 2"
    oncall = api_as(Role.ONCALL)
    ticket = xid_ticket()
    drained()

    answer = oncall.post(
        f"/api/faults/tickets/{ticket.pk}/recovery/", {"step": "validate"}, format="json"
    )

    assert answer.status_code == 202, answer.content
    action = Action.objects.get(kind=VALIDATE_ACTION)
    assert action.target == "gpu001"
    assert action.reason.startswith(f"{ticket.reference}: validate, then resume")
    assert action.parameters["command"] == "dcgmi diag -r 2"
    assert action.parameters["ref"] == ticket.reference
    ticket = FaultTicket.objects.get(pk=ticket.pk)
    assert action in ticket.actions.all()
    assert ticket.timeline.filter(action=action).exists()


def test_the_ticket_page_offers_validation_before_the_plain_resume(fleet, make_user, client):  # noqa: F811
    client.force_login(make_user(Role.ONCALL))
    ticket = xid_ticket()
    drained()

    page = client.get(f"/faults/{ticket.pk}/").content.decode()

    assert "Validate, then resume gpu001" in page
    assert page.index("Validate, then resume gpu001") < page.index("Resume gpu001")
    posted = client.post(f"/faults/{ticket.pk}/recovery/", {"step": "validate"})
    assert posted.status_code == 302
    assert Action.objects.filter(kind=VALIDATE_ACTION, target="gpu001").count() == 1


def test_a_node_drained_by_nhc_is_not_validated_by_the_portal(fleet, api_as):  # noqa: F811
    oncall = api_as(Role.ONCALL)
    ticket = xid_ticket()
    node = drained()
    node.slurm_reason = "NHC: check_gpu_health: GPU 3 unhealthy"
    node.save(update_fields=["slurm_reason"])

    answer = oncall.post(
        f"/api/faults/tickets/{ticket.pk}/recovery/", {"step": "validate"}, format="json"
    )

    assert answer.status_code == 400
    assert "step" in answer.json()
    assert not Action.objects.filter(kind=VALIDATE_ACTION).exists()
