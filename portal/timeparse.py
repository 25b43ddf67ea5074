"""Dates and times from requests, made safe for the database."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils.dateparse import parse_datetime


def parse_datetime_utc(value: str) -> datetime:
    """An ISO 8601 / RFC 3339 date and time as an aware datetime in UTC (naive means UTC).

    Any offset RFC 3339 allows (-23:59 to +23:59) is accepted and converted: PostgreSQL refuses
    offsets beyond ±15:59 in a timestamptz, so an unconverted `-19:53` was a 500. Raises
    ValueError for text that is not a date and time, or one that leaves the calendar in UTC.
    """
    parsed = parse_datetime(value)  # ValueError for a well-formed but impossible date
    if parsed is None:
        raise ValueError(f"{value!r} is not an ISO 8601 date and time")
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value!r} is out of range in UTC") from None
