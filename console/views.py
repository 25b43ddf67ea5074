"""Pages of the console app: the search behind the header's jump box."""

from __future__ import annotations

from django.shortcuts import redirect
from django.views.generic import TemplateView

from console.search import search
from portal.errors import InvalidInput
from portal.models.accounts import Role
from portal.views import RoleRequiredMixin


class SearchPageView(RoleRequiredMixin, TemplateView):
    """The jump box's target: straight to the object when the query names exactly one, else
    the list of matches (or why the query was refused) with the box filled in again."""

    template_name = "console/search.html"
    allowed_roles = frozenset(Role)

    def get(self, request, *args, **kwargs):
        query = request.GET.get("q", "").strip()
        context = self.get_context_data(query=query, result=None, error="")
        if query:
            try:
                result = search(user=request.user, query=query)
            except InvalidInput as error:
                context["error"] = "; ".join(str(m) for m in error.detail.get("q", [error]))
                return self.render_to_response(context, status=400)
            if result.jump is not None and request.GET.get("list") != "1":
                return redirect(result.jump.url)
            context["result"] = result
        return self.render_to_response(context)
