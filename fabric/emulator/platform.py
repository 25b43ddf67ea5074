"""Static facts about the emulated hardware: Edgecore AIS800-64O (Accton AS9817-64O, Tomahawk 5).

Port names, lanes, aliases and indexes follow the HwSKU files in edge-core/sonic-buildimage
(`device/accton/x86_64-accton_as9817_64o-r0/Accton-AS9817-64O*/port_config.ini`): 64 OSFP
cages of 8 SerDes lanes each, whose lane numbers are not in cage order, plus two 25G
management-speed ports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

PLATFORM = "x86_64-accton_as9817_64o-r0"
HWSKU = "Accton-AS9817-64O"
ASIC_TYPE = "broadcom"
MODEL_NUMBER = "AIS800-64O"
HARDWARE_REVISION = "R01"
SONIC_BUILD_VERSION = "202311.3"
SONIC_OS_VERSION = "12"
DEBIAN_VERSION = "12.5"
KERNEL_VERSION = "6.1.0-11-2-amd64"
BUILD_COMMIT = "8b3c1a9f5"
BUILD_DATE = "Tue Apr 16 03:12:45 UTC 2024"
BUILT_BY = "sonicbld@jenkins-worker-4"
# /etc/sonic/sonic_version.yml of the built-in image, the keys sonic-buildimage's
# files/build_templates/sonic_version.yml.j2 writes and `show version` reads.
SONIC_VERSION_INFO = {
    "build_version": SONIC_BUILD_VERSION,
    "sonic_os_version": SONIC_OS_VERSION,
    "debian_version": DEBIAN_VERSION,
    "kernel_version": KERNEL_VERSION,
    "asic_type": ASIC_TYPE,
    "commit_id": BUILD_COMMIT,
    "build_date": BUILD_DATE,
    "built_by": BUILT_BY,
}

CAGE_COUNT = 64
LANES_PER_CAGE = 8
FULL_SPEED = 800_000  # Mbps, as CONFIG_DB stores it
BREAKOUT_SPEED = 400_000
MGMT_SPEED = 25_000

# First SerDes lane of each cage, cage 1 first (port_config.ini of the 1x800G SKU).
_CAGE_FIRST_LANE = (
    25, 9, 49, 33, 81, 65, 113, 97, 145, 129, 177, 161, 209, 193, 241, 225,
    281, 265, 305, 289, 337, 321, 369, 353, 401, 385, 433, 417, 465, 449, 497, 481,
    1, 17, 41, 57, 73, 89, 105, 121, 137, 153, 169, 185, 201, 217, 233, 249,
    257, 273, 297, 313, 329, 345, 361, 377, 393, 409, 425, 441, 457, 473, 489, 505,
)

# The two management-speed ports after the 64 cages: (name, lane, cage index).
_MGMT_PORTS = (("Ethernet512", 514, 65), ("Ethernet513", 513, 66))

TRANSCEIVER_OSFP = "OSFP 8X Pluggable Transceiver"
TRANSCEIVER_SFP = "SFP/SFP+/SFP28"


@dataclass(frozen=True)
class PortInfo:
    """One logical port as port_config.ini describes it."""

    name: str
    lanes: tuple[int, ...]
    alias: str
    index: int
    speed: int
    subport: int = 0  # 1 or 2 for the halves of a broken-out cage, 0 otherwise

    @property
    def is_management(self) -> bool:
        return self.speed == MGMT_SPEED

    @property
    def transceiver_type(self) -> str:
        return TRANSCEIVER_SFP if self.is_management else TRANSCEIVER_OSFP


def cage_port_name(cage: int) -> str:
    """SONiC name of the first port of a 1-based cage number: cage 1 -> Ethernet0."""
    return f"Ethernet{(cage - 1) * LANES_PER_CAGE}"


CAGE_PORT_NAMES = tuple(cage_port_name(cage) for cage in range(1, CAGE_COUNT + 1))


def port_table(breakout: Iterable[str] = ()) -> dict[str, PortInfo]:
    """All logical ports in index order; each cage named in `breakout` becomes 2x400G.

    A broken-out cage keeps its first name for the first four lanes (Ethernet0) and gains a
    second port four names on (Ethernet4), as in the 2x400G SKU's port_config.ini.
    """
    split = set(breakout)
    unknown = split.difference(CAGE_PORT_NAMES)
    if unknown:
        raise ValueError(f"not a 800G cage port, cannot break out: {', '.join(sorted(unknown))}")
    ports: dict[str, PortInfo] = {}
    for cage, first_lane in enumerate(_CAGE_FIRST_LANE, start=1):
        name = cage_port_name(cage)
        lanes = tuple(range(first_lane, first_lane + LANES_PER_CAGE))
        if name not in split:
            ports[name] = PortInfo(name, lanes, f"Eth{cage}(Port{cage})", cage, FULL_SPEED)
            continue
        base = (cage - 1) * LANES_PER_CAGE
        for half in (1, 2):
            half_name = f"Ethernet{base + (half - 1) * 4}"
            half_lanes = lanes[(half - 1) * 4:half * 4]
            ports[half_name] = PortInfo(
                half_name, half_lanes, f"Eth{cage}/{half}(Port{cage})", cage, BREAKOUT_SPEED,
                subport=half,
            )
    for name, lane, index in _MGMT_PORTS:
        ports[name] = PortInfo(name, (lane,), f"Eth{index}(Port{index})", index, MGMT_SPEED)
    return ports
