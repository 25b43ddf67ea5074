"""Django admin for the portal's own models; changes made here are audited like the API's."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from portal.models import Action, APIToken, AuditEntry, Tenant, User
from portal.services.audit import record_change, snapshot


class AuditedAdminMixin:
    def save_model(self, request, obj, form, change):
        before = snapshot(type(obj).objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)
        record_change(
            actor=request.user,
            operation="update" if change else "create",
            instance=obj,
            before=before,
            after=snapshot(obj),
            via="ui",
        )

    def delete_model(self, request, obj):
        record_change(
            actor=request.user, operation="delete", instance=obj, before=snapshot(obj), via="ui"
        )
        super().delete_model(request, obj)


@admin.register(Tenant)
class TenantAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "slug", "slurm_account", "evpn_vni"]
    search_fields = ["name", "slug", "slurm_account"]


@admin.register(User)
class PortalUserAdmin(AuditedAdminMixin, UserAdmin):
    list_display = ["username", "email", "tenant", "is_active", "is_superuser"]
    list_filter = ["groups", "tenant", "is_active"]
    fieldsets = [*UserAdmin.fieldsets, ("Tenant", {"fields": ["tenant"]})]


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["timestamp", "actor_name", "operation", "object_type", "object_repr", "via"]
    list_filter = ["operation", "object_type", "via"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Action)
class ActionAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "target", "status", "attempts", "created_at"]
    list_filter = ["status", "kind"]
    readonly_fields = [field.name for field in Action._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "created_at", "last_used_at", "expires_at"]
    exclude = ["key_digest"]
    readonly_fields = ["prefix", "user", "created_at", "last_used_at"]

    def has_add_permission(self, request):
        return False
