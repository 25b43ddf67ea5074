"""Request middleware of the portal."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, JsonResponse

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
