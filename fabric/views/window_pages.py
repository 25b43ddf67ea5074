"""The maintenance calendar: windows past, current and future over four weeks, a form to plan
one, and an operator's start, end and cancel. Reads through fabric.selectors, writes through
fabric.maintenance_windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.views import View
from django.views.generic import TemplateView

from fabric import maintenance_windows as windows
from fabric import selectors
from portal.errors import Conflict, InvalidInput
from portal.roles import may
from portal.views import RoleRequiredMixin

CALENDAR_DAYS = 28


def _moment(text: str, field: str) -> datetime:
    """A datetime-local field, read as UTC (the page says so): the calendar is in UTC."""
    parsed = parse_datetime((text or "").strip())
    if parsed is None:
        raise InvalidInput({field: ["Enter a date and time, e.g. 2026-12-01T08:00."]})
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)


class MaintenanceCalendarView(RoleRequiredMixin, TemplateView):
    capability = "read_fabric"
    template_name = "fabric/maintenance_calendar.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        now = timezone.now()
        chosen = parse_date(self.request.GET.get("from", "") or "")
        around = (timezone.make_aware(datetime.combine(chosen, datetime.min.time()), UTC)
                  if chosen else now)
        calendar = selectors.maintenance_calendar(around=around, days=CALENDAR_DAYS)
        context.update(
            calendar=calendar, now=now, weeks=[calendar["days"][i:i + 7]
                                               for i in range(0, CALENDAR_DAYS, 7)],
            previous=(calendar["first"] - timedelta(days=CALENDAR_DAYS)).date(),
            following=calendar["last"].date(),
            may_plan=may(self.request.user, "act_on_switch"),
            errors=kwargs.get("errors", {}), form=kwargs.get("form", {}),
        )
        return context

    def post(self, request, *args, **kwargs):
        if not may(request.user, "act_on_switch"):
            raise PermissionDenied("Only admins and operators plan maintenance.")
        form = request.POST
        try:
            window = windows.create_maintenance_window(
                planned_start=_moment(form.get("planned_start"), "planned_start"),
                planned_end=_moment(form.get("planned_end"), "planned_end"),
                switch_names=[name for name in form.get("switches", "").replace(",", " ").split()],
                hostlist=form.get("nodes", ""), reason=form.get("reason", ""),
                owner=request.user, via="ui",
            )
        except InvalidInput as error:
            detail = error.detail if isinstance(error.detail, dict) else {"__all__": [error.detail]}
            context = self.get_context_data(errors=detail, form=form)
            return self.render_to_response(context, status=400)
        messages.success(request, f"Maintenance window #{window.pk} planned; Slurm reservation "
                                  f"{window.reservation_name} is being created.")
        return redirect("fabric:maintenance-calendar")


class MaintenanceWindowStepView(RoleRequiredMixin, View):
    """POST start, end or cancel of one window."""

    capability = "act_on_switch"
    steps = {"start": windows.start_maintenance_window, "end": windows.end_maintenance_window,
             "cancel": windows.cancel_maintenance_window}

    def post(self, request, pk: int, step: str):
        window = selectors.maintenance_window_list().filter(pk=pk).first()
        if window is None or step not in self.steps:
            raise Http404("No such maintenance window or step")
        try:
            self.steps[step](window, requested_by=request.user, via="ui")
        except Conflict as error:
            messages.error(request, str(error.detail))
        else:
            messages.success(request, f"Maintenance window #{window.pk}: {step} requested.")
        return redirect("fabric:maintenance-calendar")
