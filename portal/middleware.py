"""Request middleware of the portal."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError

from portal.text_input import NUL, nul_character_error


class RejectNulCharactersMiddleware:
    """A NUL character in the path, a query parameter or a header is a 400 naming where it was,
    on every route: views hand these (a hostname, a filter, an Idempotency-Key) to PostgreSQL,
    which refuses NUL in text (a 500)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        field = self._field_with_nul(request)
        if field is None:
            return self.get_response(request)
        body = nul_character_error(field)
        if request.path.startswith("/api/"):
            return JsonResponse(body, status=400)
        return HttpResponseBadRequest(body["detail"], content_type="text/plain")

    @staticmethod
    def _field_with_nul(request) -> str | None:
        if NUL in request.path:
            return "path"
        for name, values in request.GET.lists():
            if NUL in name or any(NUL in value for value in values):
                return name
        for key, value in request.META.items():
            if key.startswith("HTTP_") and isinstance(value, str) and NUL in value:
                return key.removeprefix("HTTP_").replace("_", "-").title()
        return None


FORM_CONTENT_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


class RequestBodyErrorsMiddleware:
    """A body Django cannot read is a JSON 4xx naming the body, on every path.

    Django parses a form body when something first reads `request.POST` (the CSRF middleware,
    a view, DRF's parsers): a malformed multipart body, too many fields or a body past
    DATA_UPLOAD_MAX_MEMORY_SIZE then raise there, and Django answers with its HTML 400 page
    and an ERROR with a traceback. The form is parsed here first instead, so each is a
    client's mistake answered as one; a body of another type is refused by its length alone.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        error = self._body_error(request)
        if error is None:
            return self.get_response(request)
        status, message = error
        return JsonResponse({"detail": message, "body": [message]}, status=status)

    @staticmethod
    def _body_error(request) -> tuple[int, str] | None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        too_big = (413, f"The body is larger than the {limit:,} bytes this portal reads.")
        if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
            try:
                # The body is read whole first (no view takes a file upload), so that DRF's
                # parsers can read it again after Django's.
                request.body  # noqa: B018
                request.POST  # noqa: B018 - parsed now, so that its errors are answered here
            except RequestDataTooBig:
                return too_big
            except (MultiPartParserError, TooManyFieldsSent, TooManyFilesSent) as error:
                return 400, f"The {request.content_type} body cannot be read: {error}"
            return None
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return 400, "The Content-Length header is not a number."
        if limit is not None and length > limit:
            return too_big
        return None
