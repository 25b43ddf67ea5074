"""The CONFIG_DB an emulated switch boots with, as its /etc/sonic/config_db.json would hold it.

Port entries follow the platform's port_config.ini; QoS and buffer entries follow SONiC's
default lossless templates (AZURE maps, PFC on priorities 3 and 4, the AZURE_LOSSLESS WRED
profile with ECN on queues 3 and 4).
"""

from __future__ import annotations

from .database import CONFIG_DB, Hash, make_key
from .platform import (
    CAGE_PORT_NAMES,
    FULL_SPEED,
    HWSKU,
    PLATFORM,
    PortInfo,
)
from .spec import SwitchSpec

DEFAULT_MTU = "9100"
LOSSLESS_PRIORITIES = "3,4"
LOSSLESS_QUEUES = ("3", "4")
WRED_PROFILE_NAME = "AZURE_LOSSLESS"
ROLE_DEVICE_TYPES = {
    "leaf": "LeafRouter",
    "spine": "SpineRouter",
    "storage": "LeafRouter",
    "management": "MgmtToRRouter",
}

WRED_PROFILE = {
    "wred_green_enable": "true",
    "wred_yellow_enable": "true",
    "wred_red_enable": "true",
    "ecn": "ecn_all",
    "green_max_threshold": "2097152",
    "green_min_threshold": "1048576",
    "yellow_max_threshold": "2097152",
    "yellow_min_threshold": "1048576",
    "red_max_threshold": "2097152",
    "red_min_threshold": "1048576",
    "green_drop_probability": "5",
    "yellow_drop_probability": "5",
    "red_drop_probability": "5",
}

BUFFER_POOLS = {
    "ingress_lossless_pool": {"mode": "dynamic", "size": "135266304", "type": "ingress",
                              "xoff": "36700160"},
    "egress_lossless_pool": {"mode": "static", "size": "165150720", "type": "egress"},
    "egress_lossy_pool": {"mode": "dynamic", "size": "135266304", "type": "egress"},
}

BUFFER_PROFILES = {
    "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
    "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0",
                                "static_th": "165150720"},
    "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "1778", "dynamic_th": "1"},
    "pg_lossless_800000_5m_profile": {"pool": "ingress_lossless_pool", "size": "18796",
                                      "xon": "18796", "xoff": "731136", "dynamic_th": "0"},
    "pg_lossless_400000_5m_profile": {"pool": "ingress_lossless_pool", "size": "18796",
                                      "xon": "18796", "xoff": "376832", "dynamic_th": "0"},
}

# What sonic-cfggen writes from the lossy buffer templates, and the cable length buffermgrd
# uses to name the lossless profiles (pg_lossless_<speed>_<cable>_profile).
CABLE_LENGTH = "5m"
LOSSY_PG = "0"
LOSSLESS_PGS = "3-4"

# init_cfg.json.j2's FLEX_COUNTER_TABLE (sonic-buildimage files/build_templates): every group
# but the WRED/ECN ones is enabled on a fresh image.
FLEX_COUNTER_GROUPS = ("ACL", "PORT", "PORT_PHY_ATTR", "RIF", "QUEUE", "PFCWD", "PG_WATERMARK",
                       "PG_DROP", "QUEUE_WATERMARK", "BUFFER_POOL_WATERMARK", "PORT_BUFFER_DROP")

PORT_QOS_MAP = {
    "dscp_to_tc_map": "AZURE",
    "tc_to_queue_map": "AZURE",
    "tc_to_pg_map": "AZURE",
    "pfc_to_queue_map": "AZURE",
    "pfc_to_pg_map": "AZURE",
    "pfc_enable": LOSSLESS_PRIORITIES,
    "pfcwd_sw_enable": LOSSLESS_PRIORITIES,
}


def port_config(port: PortInfo, admin_up: bool) -> Hash:
    """A CONFIG_DB PORT entry with the fields sonic-yang-models defines for the platform."""
    entry = {
        "admin_status": "up" if admin_up else "down",
        "alias": port.alias,
        "fec": "none" if port.is_management else "rs",
        "index": str(port.index),
        "lanes": ",".join(str(lane) for lane in port.lanes),
        "mtu": DEFAULT_MTU,
        "speed": str(port.speed),
    }
    if port.subport:
        entry["subport"] = str(port.subport)
    return entry


def initial_config(
    spec: SwitchSpec, ports: dict[str, PortInfo], base_mac: str
) -> dict[str, Hash]:
    """Every CONFIG_DB hash of a freshly deployed switch, keyed like SONiC keys them."""
    key = _config_key
    cabled = {neighbor.port: neighbor for neighbor in spec.neighbors}
    config: dict[str, Hash] = {
        key("DEVICE_METADATA", "localhost"): {
            "hostname": spec.hostname,
            "hwsku": HWSKU,
            "platform": PLATFORM,
            "mac": base_mac,
            "type": ROLE_DEVICE_TYPES[spec.role],
            "bgp_asn": str(spec.bgp_asn),
            "buffer_model": "traditional",
            "default_bgp_status": "up",
        },
    }
    split = set(spec.breakout)
    for cage in CAGE_PORT_NAMES:
        mode = "2x400G" if cage in split else f"1x{FULL_SPEED // 1000}G"
        config[key("BREAKOUT_CFG", cage)] = {"brkout_mode": mode}
    for name, port in ports.items():
        config[key("PORT", name)] = port_config(port, admin_up=name in cabled)
        if name in cabled:
            neighbor = cabled[name]
            config[key("DEVICE_NEIGHBOR", name)] = {
                "name": neighbor.peer_name, "port": neighbor.peer_port,
            }
        if port.is_management:
            continue
        config[key("PORT_QOS_MAP", name)] = dict(PORT_QOS_MAP)
        config[key("BUFFER_PG", name, LOSSY_PG)] = {"profile": "ingress_lossy_profile"}
        config[key("BUFFER_PG", name, LOSSLESS_PGS)] = {
            "profile": lossless_pg_profile(spec, port.speed)
        }
        for queue in LOSSLESS_QUEUES:
            config[key("QUEUE", name, queue)] = {"wred_profile": WRED_PROFILE_NAME}
    for peer in spec.bgp_peers:
        config[key("BGP_NEIGHBOR", peer.address)] = {
            "asn": str(peer.remote_as),
            "name": peer.hostname or peer.address,
            "admin_status": "up",
        }
    config[key("WRED_PROFILE", WRED_PROFILE_NAME)] = dict(WRED_PROFILE)
    for pool, fields in BUFFER_POOLS.items():
        config[key("BUFFER_POOL", pool)] = dict(fields)
    for profile, fields in BUFFER_PROFILES.items():
        config[key("BUFFER_PROFILE", profile)] = dict(fields)
    if spec.lossless_buffer_profile:
        # A platform template that binds every lossless PG to one profile of its own name.
        config[key("BUFFER_PROFILE", spec.lossless_buffer_profile)] = dict(
            BUFFER_PROFILES["pg_lossless_800000_5m_profile"])
    for group in FLEX_COUNTER_GROUPS:
        config[key("FLEX_COUNTER_TABLE", group)] = {"FLEX_COUNTER_STATUS": "enable"}
    config[key("FLEX_COUNTER_TABLE", "ACL")]["POLL_INTERVAL"] = "10000"
    if spec.ecn_queue_counters == "enabled":
        config[key("FLEX_COUNTER_TABLE", "WRED_ECN_QUEUE")] = {"FLEX_COUNTER_STATUS": "enable"}
    config[key("CABLE_LENGTH", "AZURE")] = {
        name: CABLE_LENGTH for name, port in ports.items() if not port.is_management
    }
    config[key("DEVICE_METADATA", "localhost")]["buffer_model"] = spec.buffer_model
    if spec.buffer_model == "dynamic":
        # buffers_config.j2 with dynamic_mode: lossless PGs get NULL (calculated by buffermgrd)
        # and the calculated pg_lossless_* profiles live in APPL_DB only.
        for name, port in ports.items():
            if not port.is_management:
                config[key("BUFFER_PG", name, LOSSLESS_PGS)] = {"profile": "NULL"}
        for profile in list(BUFFER_PROFILES):
            if profile.startswith("pg_lossless_"):
                del config[key("BUFFER_PROFILE", profile)]
        config[key("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE")] = {
            "default_dynamic_th": "0", "over_subscribe_ratio": "2"}
    return config


def lossless_pg_profile(spec: SwitchSpec, speed: int) -> str:
    """The profile a lossless PG is bound to in CONFIG_DB: the template's own name, or the
    traditional buffermgrd's per speed and cable (sonic-swss cfgmgr/buffermgr.cpp,
    doSpeedUpdateTask: "pg_lossless_" + speed + "_" + cable + "_profile")."""
    if spec.lossless_buffer_profile:
        return spec.lossless_buffer_profile
    return f"pg_lossless_{speed}_{CABLE_LENGTH}_profile"


def _config_key(table: str, *parts: str) -> str:
    return make_key(CONFIG_DB, table, *parts)
