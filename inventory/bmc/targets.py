"""Where a node's BMC is: its Redfish base URL, system id and credentials reference."""

from __future__ import annotations

from django.conf import settings

from inventory.bmc.drivers.base import BmcNotConfigured, BmcTarget


def has_bmc(node) -> bool:
    return bool(node.bmc_address) or node.hostname in settings.BMC_ENDPOINTS


def bmc_target(node, *, timeout: float | None = None) -> BmcTarget:
    """The BmcTarget of `node`: `BMC_ENDPOINTS[hostname]` when set (the test emulator serves
    every node's system behind one loopback address), else `https://<bmc_address>`."""
    base_url = settings.BMC_ENDPOINTS.get(node.hostname)
    if not base_url:
        if not node.bmc_address:
            raise BmcNotConfigured(f"{node.hostname} has no BMC address")
        host = f"[{node.bmc_address}]" if ":" in node.bmc_address else node.bmc_address
        base_url = f"{settings.BMC_SCHEME}://{host}"
    return BmcTarget(
        hostname=node.hostname,
        base_url=base_url.rstrip("/"),
        system_id=node.bmc_system_id,
        credentials_ref=node.bmc_credentials_ref,
        verify_tls=settings.BMC_VERIFY_TLS,
        timeout=timeout,
    )
