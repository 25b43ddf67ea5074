"""Read-only admin for fault records: changes go through faults.services (the workflow), so the
admin is for inspection (raw intake payloads above all), not for editing around the rules."""

from django.contrib import admin

from faults.models import FaultTicket, IntakeRecord


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(FaultTicket)
class FaultTicketAdmin(ReadOnlyAdmin):
    list_display = ["id", "status", "category", "severity", "summary", "node", "detected_at"]
    list_filter = ["status", "category", "severity"]
    search_fields = ["summary", "fingerprint", "gpu_serial"]


@admin.register(IntakeRecord)
class IntakeRecordAdmin(ReadOnlyAdmin):
    list_display = ["id", "channel", "accepted", "received_at", "submitted_by"]
    list_filter = ["channel", "accepted"]
