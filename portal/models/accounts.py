from django.contrib.auth.models import AbstractUser
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from portal.roles import Role

EVPN_VNI_MAX = 2**24 - 1  # VXLAN network identifiers are 24 bits


class Tenant(models.Model):
    """An organisation that is allocated nodes and isolated in its own EVPN/VXLAN segment."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=50, unique=True)
    slurm_account = models.CharField(
        max_length=64,
        unique=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9_.-]+$", "Slurm account names use letters, digits, '_', '.', '-'."
            )
        ],
        help_text="The Slurm account whose jobs belong to this tenant.",
    )
    evpn_vni = models.PositiveIntegerField(
        "EVPN VNI",
        unique=True,
        validators=[MinValueValidator(1), MaxValueValidator(EVPN_VNI_MAX)],
        help_text="VXLAN network identifier of the tenant's isolated segment (1-16777215).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(evpn_vni__gte=1, evpn_vni__lte=EVPN_VNI_MAX),
                name="tenant_evpn_vni_24_bit",
            )
        ]

    def __str__(self) -> str:
        return self.name


class AccountSource(models.TextChoices):
    """Where an account's role comes from: the portal itself, or the site's directory."""

    LOCAL = "local", "Local account"  # create_portal_user; break-glass admins
    DIRECTORY = "directory", "Directory (LDAP)"
    PROXY = "proxy", "Single sign-on proxy"


class User(AbstractUser):
    """A portal user; belongs to at most one tenant (required for tenant admins)."""

    # A directory or proxy account's role and tenant are rewritten at every sign-in; a local
    # account is never taken over by a directory entry of the same name.
    source = models.CharField(
        max_length=10, choices=AccountSource.choices, default=AccountSource.LOCAL
    )

    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="users"
    )

    @property
    def role(self) -> Role | None:
        """The user's role: superusers are admins; otherwise their single role group. Cached per
        instance."""
        if not hasattr(self, "_role_cache"):
            self._role_cache = self._role_from_groups()
        return self._role_cache

    def _role_from_groups(self) -> Role | None:
        if not self.is_authenticated or not self.is_active or self.is_superuser:
            return self.role_given_groups([])
        return self.role_given_groups(
            [name for name in self.groups.values_list("name", flat=True) if name in Role.values]
        )

    def role_given_groups(self, role_group_names: list[str]) -> Role | None:
        """The role, given the names of the user's groups that are roles (read by the caller
        with something it reads anyway, e.g. the API token), and remembered like `role`."""
        if not self.is_authenticated or not self.is_active:
            role = None
        elif self.is_superuser:
            role = Role.ADMIN
        elif len(role_group_names) != 1:
            role = None  # no role, or an ambiguous one: deny rather than guess
        else:
            role = Role(role_group_names[0])
        self._role_cache = role
        return role
