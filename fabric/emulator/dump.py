"""A switch taken from database dumps: what `python -m fabric.emulator --from-dump DIR` serves.

DIR holds one file per database in the layout `sonic-db-dump -n <DB> -y` writes (see
tools/dbdump.py): `{key: {"type": "hash", "value": {field: value}}}`, named
`config_db.json` (required), `appl_db.json`, `state_db.json` and `counters_db.json`. Entries of
other types are skipped: the emulator keeps hashes only. An entry without fields (`"value": {}`)
is kept as SONiC keeps it, a hash with the one field NULL = NULL (FIELD_LESS_ENTRY).

The switch's hostname, platform, HwSKU and BGP ASN come from CONFIG_DB `DEVICE_METADATA|
localhost`, its ports from CONFIG_DB `PORT`, its cabling from APPL_DB `LLDP_ENTRY_TABLE` and
the oper state the dump recorded; an optional `version.json` gives `build_version`,
`asic_type` and the other keys of /etc/sonic/sonic_version.yml (what a real switch keeps
outside the databases). What the dump does not hold is not invented: without `version.json`
the ASIC is the one the platform names, if it names one, and everything else `show version`
prints N/A, as it does for an absent value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .bgp import UNKNOWN
from .database import APPL_DB, CONFIG_DB, COUNTERS_DB, STATE_DB, Hash
from .platform import PortInfo
from .spec import BgpPeerSpec, NeighborSpec, SwitchSpec

DUMP_FILES = {
    CONFIG_DB: "config_db.json",
    APPL_DB: "appl_db.json",
    STATE_DB: "state_db.json",
    COUNTERS_DB: "counters_db.json",
}
VERSION_FILE = "version.json"
# An entry without fields, as SONiC stores it: Redis has no empty hash, so ConfigDBConnector
# writes `{}` as NULL/NULL (sonic-swss-common common/configdb.h, `typed_to_raw`: `elif
# len(typed_data) == 0: return { "NULL": "NULL" }`), and its readers drop the placeholder
# again (`raw_to_typed` there; `Table::dump` in common/table.cpp skips a "NULL" field), which
# is how `{}` entries (`PORT_QOS_MAP|EthernetN`) get into config_db.json and dumps.
FIELD_LESS_ENTRY = {"NULL": "NULL"}
# Platform prefixes that name the ASIC: every x86_64-mlnx_* and x86_64-nvidia_* platform of
# sonic-buildimage lives under device/mellanox/, whose `platform_asic` file says "mellanox"
# (e.g. device/mellanox/x86_64-mlnx_msn4700-r0/platform_asic), and no other vendor's does.
# Other vendors' platforms (accton, dell, arista, ...) ship more than one ASIC family.
ASIC_BY_PLATFORM_PREFIX = {"x86_64-mlnx_": "mellanox", "x86_64-nvidia_": "mellanox"}


@dataclass
class SwitchDump:
    """The four databases of one switch, hashes by key, and what `show version` needs."""

    databases: dict[str, dict[str, Hash]]
    version: dict[str, str] = field(default_factory=dict)

    @property
    def metadata(self) -> Hash:
        return self.databases[CONFIG_DB].get("DEVICE_METADATA|localhost", {})

    def version_info(self) -> dict[str, str]:
        """sonic_version.yml as far as the dump tells it: version.json, with the ASIC the
        platform names when version.json has none; absent keys stay absent (unknown)."""
        info = dict(self.version)
        platform = self.metadata.get("platform", "")
        for prefix, asic in ASIC_BY_PLATFORM_PREFIX.items():
            if platform.startswith(prefix):
                info.setdefault("asic_type", asic)
        return info

    def table(self, db: str, prefix: str) -> dict[str, Hash]:
        """One table's hashes keyed by what follows `prefix`."""
        return {key[len(prefix):]: value for key, value in self.databases[db].items()
                if key.startswith(prefix)}

    def ports(self) -> dict[str, PortInfo]:
        """CONFIG_DB's ports in their `index` order (then by name), as port_config.ini lists
        them; a port without lanes or speed keeps what it has (empty lanes, speed 0)."""
        entries = self.table(CONFIG_DB, "PORT|")

        def order(item: tuple[str, Hash]) -> tuple[int, list]:
            name, entry = item
            index = entry.get("index", "")
            digits = [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
            return (int(index) if index.isdigit() else 1 << 30, digits)

        ports: dict[str, PortInfo] = {}
        for name, entry in sorted(entries.items(), key=order):
            lanes = tuple(int(lane) for lane in entry.get("lanes", "").split(",")
                          if lane.strip().isdigit())
            speed = entry.get("speed", "")
            index = entry.get("index", "")
            subport = entry.get("subport", "")
            ports[name] = PortInfo(
                name, lanes, entry.get("alias", name), int(index) if index.isdigit() else 0,
                int(speed) if speed.isdigit() else 0, int(subport) if subport.isdigit() else 0,
            )
        return ports

    def spec(self) -> SwitchSpec:
        """A spec for the dumped switch: a neighbor on every port that was up or had an LLDP
        neighbor (with the neighbor's advertised values, hostile ones included), BGP peers
        from CONFIG_DB BGP_NEIGHBOR in the state STATE_DB recorded (else unknown)."""
        metadata = self.metadata
        appl_ports = self.table(APPL_DB, "PORT_TABLE:")
        lldp = self.table(APPL_DB, "LLDP_ENTRY_TABLE:")
        neighbors = []
        for name in self.ports():
            entry = lldp.get(name)
            up = appl_ports.get(name, {}).get("oper_status") == "up"
            if entry is None and not up:
                continue
            entry = entry or {}
            neighbors.append(NeighborSpec(
                port=name,
                peer_name=entry.get("lldp_rem_sys_name", ""),
                peer_port=entry.get("lldp_rem_port_id", ""),
                port_id=entry.get("lldp_rem_port_id"),
                port_desc=entry.get("lldp_rem_port_desc"),
                chassis_id=entry.get("lldp_rem_chassis_id"),
                system_description=entry.get("lldp_rem_sys_desc", ""),
                management_address=entry.get("lldp_rem_man_addr", ""),
                lldp=bool(entry),
                utilization=0.3 if up else None,
            ))
        # Each peer's state as bgpmon last wrote it from FRR's summary, STATE_DB
        # NEIGH_STATE_TABLE|<peer> `state` (sonic-buildimage src/sonic-bgpcfgd/bgpmon/
        # bgpmon.py, flush_pipe); a peer the dump has no state for is unknown.
        recorded = self.table(STATE_DB, "NEIGH_STATE_TABLE|")
        peers = [
            BgpPeerSpec(address, int(fields.get("asn", "0") or 0), fields.get("name", ""),
                        state=recorded.get(address, {}).get("state") or UNKNOWN)
            for address, fields in self.table(CONFIG_DB, "BGP_NEIGHBOR|").items()
            if fields.get("asn", "").isdigit()
        ]
        asn = metadata.get("bgp_asn", "")
        return SwitchSpec(
            hostname=metadata.get("hostname") or "sonic",
            neighbors=neighbors,
            bgp_peers=peers,
            bgp_asn=int(asn) if asn.isdigit() else 65100,
        )


def read_dump_file(path: Path) -> dict[str, Hash]:
    """One `sonic-db-dump -y` file: its hashes by key (other Redis types are skipped), an
    entry without fields as NULL/NULL."""
    content = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(content, dict):
        raise ValueError(f"{path}: not a sonic-db-dump file (expected a JSON object)")
    hashes: dict[str, Hash] = {}
    for key, entry in content.items():
        if not isinstance(entry, dict) or "value" not in entry:
            raise ValueError(f"{path}: {key!r} is not a sonic-db-dump entry")
        if entry.get("type") == "hash" and isinstance(entry["value"], dict):
            hashes[key] = ({str(name): str(value) for name, value in entry["value"].items()}
                           or dict(FIELD_LESS_ENTRY))
    return hashes


def load_dump(directory: str | Path) -> SwitchDump:
    """The dump files of one switch; CONFIG_DB's is required, the others may be absent."""
    directory = Path(directory)
    if not (directory / DUMP_FILES[CONFIG_DB]).is_file():
        raise FileNotFoundError(f"{directory}: no {DUMP_FILES[CONFIG_DB]}")
    databases = {
        db: read_dump_file(directory / name) if (directory / name).is_file() else {}
        for db, name in DUMP_FILES.items()
    }
    version_path = directory / VERSION_FILE
    version = json.loads(version_path.read_text(encoding="utf-8")) if version_path.is_file() else {}
    return SwitchDump(databases, {str(k): str(v) for k, v in version.items()})
