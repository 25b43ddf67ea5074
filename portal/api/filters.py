"""Filter fields for the API's filter sets."""

from __future__ import annotations

from datetime import UTC

from django import forms
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField


class UTCIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 moment, handed to the database in UTC.

    Python reads a UTC offset up to ±23:59; PostgreSQL refuses one past ±15:59 ("time zone
    displacement out of range", a 500). A moment that has no UTC form (year 1 with a positive
    offset) is refused naming the parameter.
    """

    def to_python(self, value):
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(
                "This moment is outside the years 1 to 9999 in UTC.", code="invalid"
            ) from None


class UTCIsoDateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UTCIsoDateTimeField
