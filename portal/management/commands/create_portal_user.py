"""Create a user with a role and print an API token for it (the key is shown only here)."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from portal.errors import InvalidInput
from portal.models import Role, Tenant
from portal.services.accounts import api_token_create, user_create


class Command(BaseCommand):
    help = "Create a portal user with one role and print an API token for it."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--tenant", help="Tenant slug (required for tenant_admin)")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="Browser password; omit for an API-only user")
        parser.add_argument("--token-name", default="cli")

    def handle(self, *args, **options):
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"--tenant: no tenant with slug {options['tenant']!r}")
        try:
            with transaction.atomic():
                user = user_create(
                    username=options["username"],
                    role=options["role"],
                    tenant=tenant,
                    email=options["email"],
                    password=options["password"],
                )
                _, key = api_token_create(user=user, name=options["token_name"], via="cli")
        except InvalidInput as error:
            problems = "; ".join(
                f"--{field}: {' '.join(msgs)}" for field, msgs in error.detail.items()
            )
            raise CommandError(problems) from None
        self.stdout.write(f"created {user.username} ({options['role']})")
        self.stdout.write(f"token: {key}")
