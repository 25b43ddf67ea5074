"""Pagination for the API: a `page_size` that is not a whole number from 1 to the maximum is a
400 naming it (DRF falls back to the default page size silently), and the schema states the
bounds."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class StrictPageSizeMixin:
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request):
        values = request.query_params.getlist(self.page_size_query_param)
        if not values:
            return self.page_size
        if len(values) > 1:
            raise ValidationError({self.page_size_query_param: ["Give the page size once."]})
        value = values[0]
        if not value.isdecimal() or not 1 <= int(value) <= self.max_page_size:
            raise ValidationError(
                {
                    self.page_size_query_param: [
                        f"A whole number from 1 to {self.max_page_size}, not {value[:40]!r}."
                    ]
                }
            )
        return int(value)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    **parameter["schema"],
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
        return parameters


class StandardPagination(StrictPageSizeMixin, PageNumberPagination):
    page_size = 100


# Port rows on a switch's pages: a SAKURAONE leaf (114 rows) stays on one page; a spine of a
# fleet (1,280 ports at scale 20, 8,000 at scale 125) does not make a megabyte page.
SWITCH_PORT_ROWS_PER_PAGE = 128


def page_of_rows(rows, page_number: str | None, per_page: int):
    """The page `page_number` of `rows` (a queryset or a list); a number that is not a page
    gives the nearest page, never an error, as a pasted or stale link should."""
    from django.core.paginator import Paginator

    return Paginator(rows, per_page).get_page(page_number)
