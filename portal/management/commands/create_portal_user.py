"""Create a user with a role and print an API token for it (the key is shown only here)."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

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
        parser.add_argument(
            "--token-days",
            type=int,
            help="Days until the token expires (default and maximum: API_TOKEN_MAX_LIFETIME_DAYS)",
        )

    def handle(self, *args, **options):
        expires_at = None
        if options["token_days"] is not None:
            if options["token_days"] < 1:
                raise CommandError("--token-days: give a number of days, 1 or more")
            expires_at = timezone.now() + timedelta(days=options["token_days"])
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
                token, key = api_token_create(
                    user=user, name=options["token_name"], expires_at=expires_at, via="cli"
                )
        except InvalidInput as error:
            # Service fields named as this command's options (the token's expiry is --token-days).
            option_for = {"expires_at": "token-days"}
            problems = "; ".join(
                f"--{option_for.get(field, field)}: {' '.join(msgs)}"
                for field, msgs in error.detail.items()
            )
            raise CommandError(problems) from None
        self.stdout.write(
            f"created {user.username} ({options['role']}); "
            f"the token expires {token.expires_at:%Y-%m-%d %H:%M} UTC"
        )
        self.stdout.write(f"token: {key}")
