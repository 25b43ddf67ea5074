"""Who sees and acts on faults: tenant admins nothing, viewers read, on-call and operators act.
Also the resume guard: a node with an open ticket stays out unless overridden."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from faults.models import FaultTicket
from faults.workflow import Status
from jobs.services import RESUME_ACTION, request_resume
from portal.asgi import application
from portal.errors import Conflict
from portal.models import Action, Role
from portal.services.accounts import api_token_create
from tests.faults.conftest import post_json, xid_event


@pytest.fixture
def ticket(fleet) -> FaultTicket:
    return FaultTicket.objects.create(
        summary="XID 79 on gpu001 GPU3", detected_at=timezone.now(), node=fleet.nodes[0],
        category="gpu",
    )


READ_URLS = ["/api/faults/tickets/", "/api/faults/statistics/", "/api/faults/intake/"]


def test_tenant_admin_sees_nothing_on_the_api(ticket, api_as):
    client = api_as(Role.TENANT_ADMIN)
    for url in [*READ_URLS, f"/api/faults/tickets/{ticket.pk}/"]:
        assert client.get(url).status_code in (403, 404), url
    assert post_json(client, "/api/faults/events/", xid_event()).status_code == 403
    assert post_json(client, f"/api/faults/tickets/{ticket.pk}/acknowledge/", {}).status_code in (
        403, 404)


@pytest.mark.parametrize("role", [Role.TENANT_ADMIN])
def test_tenant_admin_sees_no_fault_pages(ticket, make_user, role):
    client = Client()
    client.force_login(make_user(role))
    for url in ["/faults/", f"/faults/{ticket.pk}/", "/faults/statistics/", "/faults/report/",
                "/faults/tickets/"]:
        assert client.get(url).status_code in (403, 404), url
    assert client.post(f"/faults/{ticket.pk}/acknowledge/").status_code in (403, 404)


def test_viewer_reads_but_cannot_act(ticket, api_as, make_user):
    client = api_as(Role.VIEWER)
    for url in READ_URLS:
        assert client.get(url).status_code == 200, url
    assert client.get(f"/api/faults/tickets/{ticket.pk}/").json()["summary"] == ticket.summary
    assert post_json(client, f"/api/faults/tickets/{ticket.pk}/transition/",
                     {"to_status": "triaged"}).status_code == 403
    assert post_json(client, "/api/faults/events/", xid_event()).status_code == 403
    assert post_json(client, "/api/faults/tickets/", {"summary": "x", "node": "gpu001"}
                     ).status_code == 403
    page = Client()
    page.force_login(make_user(Role.VIEWER))
    board = page.get("/faults/")
    assert board.status_code == 200 and ticket.reference.encode() in board.content
    assert b"Acknowledge" not in board.content
    assert page.post(f"/faults/{ticket.pk}/acknowledge/").status_code == 403
    assert page.get("/faults/report/").status_code == 403


@pytest.mark.parametrize("role", [Role.ONCALL, Role.OPERATOR, Role.ADMIN])
def test_oncall_operators_and_admins_act(ticket, api_as, role):
    client = api_as(role)
    response = post_json(client, f"/api/faults/tickets/{ticket.pk}/transition/",
                         {"to_status": "triaged", "note": "confirmed"})
    assert response.status_code == 200 and response.json()["status"] == "triaged"
    assert post_json(client, f"/api/faults/tickets/{ticket.pk}/notes/", {"text": "looking"}
                     ).status_code == 201
    assert post_json(client, "/api/faults/events/", xid_event(node="gpu002")).status_code == 201


# --- websocket ---------------------------------------------------------------------------------


async def subscribe_as(user, groups):
    _, key = await sync_to_async(api_token_create)(user=user, name="ws")
    headers = [(b"origin", b"http://127.0.0.1"), (b"authorization", f"Token {key}".encode())]
    communicator = WebsocketCommunicator(application, "/ws/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    await communicator.receive_json_from(timeout=5)  # hello
    await communicator.send_json_to({"type": "subscribe", "groups": groups})
    answer = await communicator.receive_json_from(timeout=5)
    return communicator, answer


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_faults_group_refuses_tenant_admins_and_pushes_to_staff():
    from portal.services.accounts import user_create
    from tests.faults.conftest import build_fleet

    await sync_to_async(build_fleet)()
    tenant_admin = await sync_to_async(user_create)(
        username="ta", role=Role.TENANT_ADMIN, tenant=await sync_to_async(_tenant)()
    )
    oncall = await sync_to_async(user_create)(username="oc", role=Role.ONCALL)
    denied_socket, denied = await subscribe_as(tenant_admin, ["faults"])
    assert denied == {"type": "subscribed", "groups": [], "denied": ["faults"]}
    socket, allowed = await subscribe_as(oncall, ["faults"])
    assert allowed["groups"] == ["faults"]

    import json

    from faults.services import intake

    await sync_to_async(intake.receive_platform_event)(raw_body=json.dumps(xid_event()))
    event = await socket.receive_json_from(timeout=5)
    assert event["event"] == "fault.created" and event["payload"]["status"] == "new"
    assert event["payload"]["node"] == "gpu001"
    assert await denied_socket.receive_nothing(timeout=0.3)
    await socket.disconnect()
    await denied_socket.disconnect()


def _tenant():
    from portal.models import Tenant

    return Tenant.objects.create(name="T", slug="t", slurm_account="t", evpn_vni=4242)


# --- the resume guard --------------------------------------------------------------------------


def test_resume_is_refused_while_a_ticket_is_open(ticket, fleet):
    node = fleet.nodes[0]
    with pytest.raises(Conflict) as caught:
        request_resume(nodes=[node], reason="back in service")
    assert caught.value.extra["blocked_nodes"] == ["gpu001"]
    assert f"{ticket.reference} (new)" in caught.value.detail["override"][0]
    assert not Action.objects.filter(kind=RESUME_ACTION).exists()
    action, _ = request_resume(nodes=[node], reason="health check passed", override=True)
    assert action.parameters["override"] is True
    # The other node has no ticket; a resolved ticket no longer blocks.
    request_resume(nodes=[fleet.nodes[1]], reason="fine")
    FaultTicket.objects.filter(pk=ticket.pk).update(status=Status.RESOLVED)
    request_resume(nodes=[node], reason="fixed")
    assert Action.objects.filter(kind=RESUME_ACTION).count() == 3
