"""Where and how to reach an inventory switch: its SwitchTarget for the fabric driver.

By default a switch is reached at `<management_address>:<FABRIC_SSH_PORT>`. The JSON setting
`FABRIC_SWITCH_ENDPOINTS` ({"leaf01": "127.0.0.1:2201"}) overrides that per hostname, which is
how the demo and the tests point every switch at the SONiC emulator (one process, one TCP port
per switch) without inventing management addresses. Hostnames listed in
`FABRIC_TRUST_ON_FIRST_USE` get the lab-only trust-on-first-use host key policy.
"""

from __future__ import annotations

from django.conf import settings

from fabric.drivers.base import FabricError, SwitchTarget
from inventory.models import Switch


class SwitchNotAddressable(FabricError):
    """The inventory does not say how to reach the switch."""


def switch_target(switch: Switch) -> SwitchTarget:
    """The driver target of `switch`; raises SwitchNotAddressable when it has no address."""
    endpoint = settings.FABRIC_SWITCH_ENDPOINTS.get(switch.hostname)
    if endpoint:
        address, separator, port = str(endpoint).rpartition(":")
        if not separator or not port.isdigit():
            raise SwitchNotAddressable(
                f"FABRIC_SWITCH_ENDPOINTS[{switch.hostname!r}] must be host:port, got {endpoint!r}"
            )
        address, port_number = address.strip("[]"), int(port)
    elif switch.management_address:
        address, port_number = str(switch.management_address), settings.FABRIC_SSH_PORT
    else:
        raise SwitchNotAddressable(f"{switch.hostname} has no management address")
    return SwitchTarget(
        hostname=switch.hostname,
        address=address,
        port=port_number,
        credentials_ref=switch.credentials_ref,
        trust_on_first_use=switch.hostname in settings.FABRIC_TRUST_ON_FIRST_USE,
    )
