"""The thread that sends synchronous code's events to Redis (portal/realtime/events.py)."""

from __future__ import annotations

import asyncio
import logging
import random
import time

from portal.realtime import events


class SlowLayer:
    """A channel layer whose sends take a while and sometimes fail, recording what arrived."""

    def __init__(self, delay: float = 0.0, failing: frozenset[int] = frozenset()):
        self.delay, self.failing, self.arrived = delay, failing, []

    async def group_send(self, group, message):
        await asyncio.sleep(self.delay * random.random())
        if message["number"] in self.failing:
            raise RuntimeError(f"send {message['number']} failed")
        self.arrived.append((group, message["number"]))


def test_publishing_does_not_wait_for_redis_and_keeps_the_order():
    """A worker's claim or a request went on only after two Redis round trips per event; now it
    hands the event over and goes on, and the events still leave one by one, in order."""
    layer = SlowLayer(delay=0.02)
    started = time.monotonic()
    for number in range(20):
        events._publish_through_redis(layer, "actions", {"number": number})
    handed_over = time.monotonic() - started
    assert handed_over < 0.1  # 20 sends of up to 20 ms each would take ~0.2 s if waited for
    assert events.wait_until_published(timeout=5)
    assert layer.arrived == [("actions", number) for number in range(20)]


def test_a_failed_send_is_logged_and_the_next_still_leaves(caplog):
    layer = SlowLayer(failing=frozenset({1}))
    with caplog.at_level(logging.ERROR, logger="portal.realtime.events"):
        for number in range(3):
            events._publish_through_redis(layer, "cluster", {"number": number, "event": "x"})
        assert events.wait_until_published(timeout=5)
    assert layer.arrived == [("cluster", 0), ("cluster", 2)]
    assert "could not publish x to cluster" in caplog.text


def test_events_past_the_limit_are_dropped_and_logged(monkeypatch, caplog):
    """Redis away for long: the backlog is bounded rather than held in memory without end."""
    layer = SlowLayer(delay=0.05)
    monkeypatch.setattr(events._PublisherLoop, "MAX_PENDING", 3)
    with caplog.at_level(logging.WARNING, logger="portal.realtime.events"):
        for number in range(10):
            events._publish_through_redis(layer, "cluster", {"number": number, "event": "x"})
        assert events.wait_until_published(timeout=5)
    assert 3 <= len(layer.arrived) < 10
    assert [number for _, number in layer.arrived] == sorted(n for _, n in layer.arrived)
    assert "live events unsent: dropped x to cluster" in caplog.text


def test_waiting_for_the_sends_is_woken_by_the_last_one_not_by_polling(monkeypatch):
    """A request waits for its Action's "queued" event before it sends the task: a poll every
    5 ms was a third of a drain request's time. The wait sleeps on the queue's condition."""
    layer = SlowLayer(delay=0.02)
    events._publish_through_redis(layer, "actions", {"number": 0})

    def no_polling(seconds):
        raise AssertionError(f"polled with time.sleep({seconds})")

    monkeypatch.setattr(time, "sleep", no_polling)
    assert events.wait_until_published(timeout=5)
    assert layer.arrived == [("actions", 0)]


def test_waiting_gives_up_at_its_timeout_while_a_send_hangs():
    layer = SlowLayer(delay=0.0)
    hanging = asyncio.Event()

    async def hang(group, message):
        await asyncio.wait_for(hanging.wait(), 1.0)

    layer.group_send = hang
    events._publish_through_redis(layer, "actions", {"number": 0, "event": "x"})
    started = time.monotonic()
    assert not events.wait_until_published(timeout=0.2)
    assert 0.15 < time.monotonic() - started < 0.9
    assert events.wait_until_published(timeout=5)  # the hung send times out; the queue drains
