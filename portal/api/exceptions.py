"""Every API error is JSON with a `detail`, and field errors name the field."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.errors import ServiceError


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):
        body = exc.detail if isinstance(exc.detail, dict) else {"detail": exc.detail}
        return Response({**body, **exc.extra}, status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        body = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IntegrityError):
        # A constraint the serializer could not see (a race, or a rule only the database knows).
        return Response(
            {"detail": f"The change conflicts with existing data: {exc.__cause__ or exc}"},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
