"""Twenty concurrent deliveries of one event make one ticket (the partial unique constraint)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from faults.models import FaultTicket, IntakeRecord
from faults.services import intake
from jobs.services import DRAIN_ACTION
from portal.models import Action
from tests.faults.conftest import build_fleet, xid_event

DELIVERIES = 20


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_deliveries_make_one_ticket():
    import json

    build_fleet()
    start = threading.Barrier(DELIVERIES)
    results, errors = [], []

    def deliver():
        try:
            start.wait(10)
            results.append(intake.receive_platform_event(raw_body=json.dumps(xid_event())))
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(DELIVERIES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert len(results) == DELIVERIES
    ticket = FaultTicket.objects.get()
    assert sum(created for _, created in results) == 1
    assert {found.pk for found, _ in results} == {ticket.pk}
    assert ticket.event_count == DELIVERIES
    assert ticket.timeline.filter(kind="event").count() == DELIVERIES
    assert Action.objects.filter(kind=DRAIN_ACTION).count() == 1
    assert ticket.actions.count() == 1
    assert IntakeRecord.objects.filter(accepted=True).count() == DELIVERIES
