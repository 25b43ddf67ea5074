"""What every inventory page shares: role checks, 404 for what a user may not see, and the
filtered, paginated list that htmx refreshes in place."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404
from django.template.response import TemplateResponse
from django.views.generic import TemplateView

from inventory.forms import FilterForm
from portal.errors import InvalidInput, NotFound
from portal.ordering import SortableListMixin
from portal.roles import may
from portal.views import RoleRequiredMixin


def is_htmx(request) -> bool:
    """A fragment request from htmx (a history restore wants the whole page)."""
    return bool(request.headers.get("HX-Request")) and not request.headers.get(
        "HX-History-Restore-Request"
    )


class InventoryPageMixin(RoleRequiredMixin):
    """Turns a selector's NotFound into the page's 404; tells templates whether the user may
    follow links into the fabric (switch pages are for cluster-wide roles)."""

    section = ""  # which tab of the inventory's sub-navigation is current

    def dispatch(self, request, *args, **kwargs):
        try:
            return super().dispatch(request, *args, **kwargs)
        except NotFound as error:
            raise Http404(str(error.detail)) from error

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["can_see_fabric"] = may(self.request.user, "read_fabric")
        context["section"] = self.section
        return context


class FilteredListView(SortableListMixin, InventoryPageMixin, TemplateView):
    """A list page: a GET filter form, a results region htmx swaps on change, pagination.

    Bad filter values render the page with the form's messages and no rows: 400 for a page
    load, 200 for htmx (htmx only swaps successful responses, and the message must show).
    """

    form_class: type[FilterForm]
    results_template: str
    paginate_by = 50

    def rows(self, filters: dict) -> QuerySet:
        raise NotImplementedError

    def get(self, request, *args, **kwargs):
        form = self.form_class(request.GET)
        page = None
        if form.is_valid():
            try:
                rows = self.sort_queryset(self.rows(form.filters()))
                page = Paginator(rows, self.paginate_by).get_page(request.GET.get("page"))
            except InvalidInput as error:
                for field, problems in _field_problems(error):
                    form.add_error(field if field in form.fields else None, problems)
        htmx = is_htmx(request)
        status = 200 if page is not None or htmx else 400
        context = self.get_context_data(form=form, page_obj=page, **kwargs)
        template = self.results_template if htmx else self.template_name
        return TemplateResponse(request, template, context, status=status)


def _field_problems(error: InvalidInput):
    if isinstance(error.detail, dict):
        return list(error.detail.items())
    return [(None, [str(error.detail)])]
