"""Every API error is JSON with a `detail`, and field errors name the field."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.errors import ServiceError


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):
        body = exc.detail if isinstance(exc.detail, dict) else {"detail": exc.detail}
        if exc.status_code != status.HTTP_400_BAD_REQUEST and "detail" not in body:
            # A 409 about a field still says what is wrong in `detail`, as every error but a
            # 400's field list does (the schema's Error): its first message.
            body = {"detail": _first_message(body), **body}
        return Response({**body, **exc.extra}, status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        # Django's own answer is an HTML 400 and an ERROR with a traceback: a client's mistake.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"detail": f"The body is larger than the {limit:,} bytes this API reads."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
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


def _first_message(errors: dict) -> str:
    for messages in errors.values():
        if isinstance(messages, str):
            return messages
        if isinstance(messages, list) and messages and isinstance(messages[0], str):
            return messages[0]
    return "The request clashes with the current state."
