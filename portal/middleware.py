"""Middleware of the portal's own."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, JsonResponse

from portal.text_input import NUL, nul_character_error


class RejectNulCharactersMiddleware:
    """A NUL character in a query parameter is a 400 naming the parameter, on every route:
    views and filters hand query values to PostgreSQL, which refuses NUL in text (a 500)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        for name, values in request.GET.lists():
            if NUL in name or any(NUL in value for value in values):
                body = nul_character_error(name)
                if request.path.startswith("/api/"):
                    return JsonResponse(body, status=400)
                return HttpResponseBadRequest(body["detail"], content_type="text/plain")
        return self.get_response(request)
