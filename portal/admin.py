"""Django admin for the portal's own models; changes made here are audited like the API's."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from portal.models import Action, APIToken, AuditEntry, Tenant, User
from portal.realtime import recheck_sockets
from portal.services.accounts import api_token_revoke
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

    # Deactivating, a new role (the groups, saved after the user) or tenant: the user's open
    # websockets check again what they may follow once the admin's transaction commits.
    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if change:
            recheck_sockets(user_ids=[form.instance.pk])

    # After the delete: outside a transaction (the bulk action) the request is sent at once.
    def delete_model(self, request, obj):
        user_id = obj.pk
        super().delete_model(request, obj)
        recheck_sockets(user_ids=[user_id])

    def delete_queryset(self, request, queryset):
        user_ids = list(queryset.values_list("pk", flat=True))
        super().delete_queryset(request, queryset)
        recheck_sockets(user_ids=user_ids)


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

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        recheck_sockets(user_ids=[obj.user_id])  # a new expiry, perhaps already past

    # Deleting here is revoking: audited, and the token's websockets closed.
    def delete_model(self, request, obj):
        api_token_revoke(token=obj, revoked_by=request.user, via="ui")

    def delete_queryset(self, request, queryset):
        for token in queryset:
            api_token_revoke(token=token, revoked_by=request.user, via="ui")
