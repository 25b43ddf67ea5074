"""Give the demo's tenants the nodes they hold: `make demo` runs this after `seed_demo`.

A tenant admin's dashboard, the tenant pages, the usage charts and the allocation guards all
start from allocations; a demo without any showed "0 of 0 GPUs" to a tenant admin whose job was
running (issue 26). Each allocation is made through the same service as the UI's (its Slurm
reservation is an Action like any other). Safe to run again: a tenant that already holds nodes
is left as it is.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from inventory.allocations import allocation_create
from inventory.models import Allocation
from portal.errors import ServiceError
from portal.models import Tenant

# slug, hostlist, purpose. The simulated cluster's jobs run under both tenants' accounts
# (jobs/drivers/cluster_model.py); once allocated, a tenant's nodes take only its own jobs, as a
# slurmctld reservation does, and the rest of the cluster stays shared.
DEMO_ALLOCATIONS = [
    ("tenant-a", "gpu[001-008]", "Inference and data preparation"),
    ("sakura-research", "gpu[011-050]", "LLM pre-training (pod p1)"),
]


class Command(BaseCommand):
    help = "Allocate nodes to the demo tenants (after import_topology and seed_demo)."

    def handle(self, *args, **options):
        start = timezone.now() - timedelta(days=14)
        for slug, hostlist, purpose in DEMO_ALLOCATIONS:
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                raise CommandError(f"No tenant {slug!r}: run `manage.py seed_demo` first.")
            if Allocation.objects.current().filter(tenant=tenant).exists():
                self.stdout.write(f"{tenant.name} already holds nodes: left as it is")
                continue
            try:
                allocation = allocation_create(tenant=tenant, start=start, hostlist=hostlist,
                                               purpose=purpose, via="seed_demo")
            except ServiceError as error:
                raise CommandError(f"{tenant.name}: {error}") from error
            self.stdout.write(f"{tenant.name}: allocation #{allocation.pk}, {hostlist}")
