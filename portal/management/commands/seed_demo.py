"""Seed the demo: tenants and one user per role. Safe to run again."""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from portal.models import Role, Tenant, User
from portal.services.accounts import user_create

DEMO_TENANTS = [
    # name, slug, Slurm account, EVPN VNI
    ("Sakura Research", "sakura-research", "sakura", 10100),
    ("Tenant A", "tenant-a", "tenant-a", 10200),
]


class Command(BaseCommand):
    help = "Create demo tenants and users (admin, operator, oncall, tenant_admin, viewer)."

    def add_arguments(self, parser):
        parser.add_argument("--password", help="Password for all demo users (default: random)")
        parser.add_argument(
            "--logins-file",
            help="Also write the logins here, readable by the owner only, for scripts/demo-run "
            "to print once the demo is up (default: VAR_DIR/demo-logins.txt)",
        )

    @transaction.atomic
    def handle(self, *args, **options):
        for name, slug, account, vni in DEMO_TENANTS:
            Tenant.objects.get_or_create(
                slug=slug, defaults={"name": name, "slurm_account": account, "evpn_vni": vni}
            )
        password = options["password"] or secrets.token_urlsafe(9)
        for role in Role:
            username = f"demo-{role.value.replace('_', '-')}"
            tenant = Tenant.objects.get(slug="tenant-a") if role == Role.TENANT_ADMIN else None
            user = User.objects.filter(username=username).first()
            if user is None:
                user = user_create(username=username, role=role, tenant=tenant, password=password)
            else:
                user.set_password(password)
                user.save(update_fields=["password"])
        logins = "\n".join([
            "Demo users (all share one password):",
            *(f"  demo-{role.value.replace('_', '-'):<14} role {role.value}" for role in Role),
            f"  password: {password}",
        ])
        self.stdout.write(self.style.SUCCESS(logins))
        # `make demo` prints 40 lines of topology import and the servers' start-up after this;
        # scripts/demo-run prints the file again last, where nobody has to scroll for it.
        path = Path(options["logins_file"] or settings.VAR_DIR / "demo-logins.txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as logins_file:
            logins_file.write(logins + "\n")
