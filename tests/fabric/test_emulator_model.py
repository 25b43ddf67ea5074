"""The emulated switch without SSH: platform, databases, traffic, wiring and the interpreter."""

from __future__ import annotations

import json
import uuid

import pytest
import redis

from fabric.emulator import (
    BgpPeerSpec,
    CommandInterpreter,
    MemoryDatabase,
    NeighborSpec,
    RedisDatabase,
    Switch,
    SwitchSpec,
    TrafficModel,
    connect_fabric,
)
from fabric.emulator.database import redis_glob
from fabric.emulator.platform import port_table
from fabric.emulator.traffic import PortQos


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def leaf(**overrides) -> SwitchSpec:
    values = {
        "hostname": "leaf01",
        "breakout": ["Ethernet0"],
        "neighbors": [
            NeighborSpec("Ethernet0", "gpu001", "mlx5_0"),
            NeighborSpec("Ethernet8", "spine01", "Ethernet0"),
        ],
        "bgp_peers": [BgpPeerSpec("10.0.0.1", 65200, "spine01", port="Ethernet8",
                                  prefixes_received=64)],
    }
    values.update(overrides)
    return SwitchSpec(**values)


def test_port_table_follows_the_as9817_port_config():
    ports = port_table()
    assert len(ports) == 66
    assert ports["Ethernet0"].lanes == tuple(range(25, 33))
    assert ports["Ethernet256"].lanes == tuple(range(1, 9))
    assert ports["Ethernet504"].alias == "Eth64(Port64)"
    assert ports["Ethernet512"].speed == 25000 and ports["Ethernet513"].lanes == (513,)

    split = port_table(["Ethernet0"])
    assert [name for name in split][:3] == ["Ethernet0", "Ethernet4", "Ethernet8"]
    assert split["Ethernet4"].alias == "Eth1/2(Port1)"
    assert split["Ethernet4"].lanes == (29, 30, 31, 32) and split["Ethernet4"].speed == 400000
    with pytest.raises(ValueError, match="Ethernet4"):
        port_table(["Ethernet4"])


def test_config_db_port_entries_use_the_yang_fields():
    switch = Switch(leaf())
    entry = switch.db.hgetall("CONFIG_DB", "PORT|Ethernet8")
    assert entry == {"admin_status": "up", "alias": "Eth2(Port2)", "fec": "rs", "index": "2",
                     "lanes": "9,10,11,12,13,14,15,16", "mtu": "9100", "speed": "800000"}
    # Nothing cabled: the YANG default, admin down.
    assert switch.db.hget("CONFIG_DB", "PORT|Ethernet16", "admin_status") == "down"
    assert switch.db.hget("APPL_DB", "PORT_TABLE:Ethernet16", "oper_status") == "down"
    assert switch.db.hget("APPL_DB", "PORT_TABLE:Ethernet8", "oper_status") == "up"


def test_redis_glob_matches_like_redis():
    assert redis_glob("PORT|Ethernet[0-4]").fullmatch("PORT|Ethernet4")
    assert not redis_glob("PORT|Ethernet[^0-4]").fullmatch("PORT|Ethernet4")
    assert redis_glob("COUNTERS:oid:0x1?").fullmatch("COUNTERS:oid:0x1a")
    assert redis_glob("a\\*").fullmatch("a*") and not redis_glob("a\\*").fullmatch("ab")


def test_memory_database_drops_empty_hashes_like_redis():
    db = MemoryDatabase()
    assert db.hset("CONFIG_DB", "PORT|Ethernet0", {"mtu": "9100", "fec": "rs"}) == 2
    assert db.hset("CONFIG_DB", "PORT|Ethernet0", {"mtu": "9000"}) == 0
    assert db.hdel("CONFIG_DB", "PORT|Ethernet0", "mtu", "fec") == 2
    assert db.keys("CONFIG_DB") == []
    with pytest.raises(ValueError, match="ASIC_DB"):
        db.hgetall("ASIC_DB", "x")


def test_traffic_is_deterministic_for_a_seed_and_congestion_raises_pfc_and_ecn():
    def run(seed: int) -> TrafficModel:
        model = TrafficModel(seed=seed, default_utilization=0.95)
        model.add_port("Ethernet0", 800_000)
        model.add_port("Ethernet8", 800_000, utilization=0.5)
        qos = PortQos(pfc_priorities=frozenset({3, 4}), ecn_marking={3: 0.05})
        for _ in range(5):
            model.advance(1.0, {"Ethernet0": qos, "Ethernet8": qos})
        return model

    first, again, other = run(7), run(7), run(8)
    assert first.counters("Ethernet0") == again.counters("Ethernet0")
    assert first.counters("Ethernet0").out_octets != other.counters("Ethernet0").out_octets
    congested, calm = first.counters("Ethernet0"), first.counters("Ethernet8")
    assert congested.pfc_rx_pkts[3] > 0 and congested.pfc_tx_pkts[3] > 0
    assert calm.pfc_rx_pkts[3] == 0 and congested.pfc_rx_pkts[0] == 0
    assert first.queue("Ethernet0", 3).ecn_marked_packets > 0
    assert first.queue("Ethernet8", 3).ecn_marked_packets == 0
    # About 95 % of 100 GB/s for five seconds.
    assert 4.5e11 < congested.out_octets < 5e11


def test_without_pfc_a_congested_queue_drops_instead_of_pausing():
    model = TrafficModel(seed=1, default_utilization=1.0)
    model.add_port("Ethernet0", 400_000)
    model.advance(1.0, {"Ethernet0": PortQos()})
    assert model.counters("Ethernet0").pfc_rx_pkts[3] == 0
    assert model.queue("Ethernet0", 3).dropped_packets > 0
    assert model.counters("Ethernet0").out_discards > 0


def test_cut_cable_takes_the_port_down_and_fires_the_hook():
    clock = FakeClock()
    switch = Switch(leaf(), clock=clock)
    events = []
    unsubscribe = switch.on_port_oper_change(lambda *event: events.append(event))
    switch.set_link_up("Ethernet0", False)
    assert events == [("leaf01", "Ethernet0", False)]
    assert switch.db.hget("APPL_DB", "PORT_TABLE:Ethernet0", "oper_status") == "down"
    assert switch.db.hgetall("APPL_DB", "LLDP_ENTRY_TABLE:Ethernet0") == {}
    assert switch.admin_up("Ethernet0")
    switch.set_link_up("Ethernet0", True)
    unsubscribe()
    switch.set_link_up("Ethernet0", False)
    assert events == [("leaf01", "Ethernet0", False), ("leaf01", "Ethernet0", True)]


def test_a_failing_hook_does_not_break_the_change():
    switch = Switch(leaf())

    def broken(*_event: object) -> None:
        raise RuntimeError("subscriber bug")

    switch.on_port_oper_change(broken)
    switch.set_link_up("Ethernet8", False)
    assert not switch.oper_up("Ethernet8")


def test_wired_switches_see_each_other_and_share_link_state():
    clock = FakeClock()
    leaf_switch = Switch(leaf(), clock=clock)
    spine = Switch(SwitchSpec("spine01", role="spine", neighbors=[
        NeighborSpec("Ethernet0", "leaf01", "Ethernet8"),
    ]), clock=clock)
    connect_fabric([leaf_switch, spine])
    lldp = leaf_switch.db.hgetall("APPL_DB", "LLDP_ENTRY_TABLE:Ethernet8")
    assert lldp["lldp_rem_sys_name"] == "spine01"
    assert lldp["lldp_rem_port_id"] == "Eth1(Port1)"  # SONiC's lldpd advertises the alias
    assert lldp["lldp_rem_port_desc"] == "Ethernet0"
    assert lldp["lldp_rem_chassis_id"] == spine.base_mac

    events = []
    spine.on_port_oper_change(lambda *event: events.append(event))
    interpreter = CommandInterpreter(leaf_switch)
    assert interpreter.run("sudo config interface shutdown Ethernet8").exit_status == 0
    assert events == [("spine01", "Ethernet0", False)]
    assert spine.db.hget("APPL_DB", "PORT_TABLE:Ethernet0", "oper_status") == "down"
    interpreter.run("sudo config interface startup Ethernet8")
    assert spine.oper_up("Ethernet0") and leaf_switch.oper_up("Ethernet8")

    leaf_switch.set_link_up("Ethernet8", False)  # one cable, two ends
    assert not spine.oper_up("Ethernet0")


def test_neighbor_and_partner_queries_and_recabling():
    leaf_switch = Switch(leaf())
    spine = Switch(SwitchSpec("spine01", neighbors=[NeighborSpec("Ethernet0", "leaf01",
                                                                 "Ethernet8")]))
    connect_fabric([leaf_switch, spine])
    assert leaf_switch.neighbor("Ethernet0").peer_name == "gpu001"
    assert leaf_switch.link_partner("Ethernet8") == (spine, "Ethernet0")
    assert leaf_switch.link_partner("Ethernet0") is None

    leaf_switch.set_neighbor("Ethernet8", NeighborSpec("Ethernet8", "gpu002", "mlx5_1"))
    assert spine.link_partner("Ethernet0") is None and not spine.oper_up("Ethernet0")
    lldp = leaf_switch.db.hgetall("APPL_DB", "LLDP_ENTRY_TABLE:Ethernet8")
    assert (lldp["lldp_rem_sys_name"], lldp["lldp_rem_port_id"]) == ("gpu002", "mlx5_1")
    leaf_switch.set_neighbor("Ethernet8", None)
    assert not leaf_switch.oper_up("Ethernet8")
    assert leaf_switch.db.hgetall("STATE_DB", "TRANSCEIVER_INFO|Ethernet8") == {}


def test_error_rate_shows_in_in_errors():
    clock = FakeClock()
    switch = Switch(leaf(), clock=clock)
    switch.traffic.set_error_rate("Ethernet8", 0.001)
    clock.now += 1
    switch.tick()
    counters = switch.db.hgetall("COUNTERS_DB", f"COUNTERS:{switch.port_oids['Ethernet8']}")
    received = int(counters["SAI_PORT_STAT_IF_IN_UCAST_PKTS"])
    assert int(counters["SAI_PORT_STAT_IF_IN_ERRORS"]) == pytest.approx(received / 1000, rel=0.01)


def test_interpreter_runs_lists_and_refuses_pipes():
    interpreter = CommandInterpreter(Switch(leaf()))
    result = interpreter.execute('echo "a;b" ; false || echo fallback && hostname')
    assert (result.stdout, result.exit_status) == ("a;b\nfallback\nleaf01\n", 0)
    result = interpreter.execute("sonic-db-cli APPL_DB KEYS '*' | wc -l")
    assert result.exit_status == 2 and "does not support '|'" in result.stderr
    result = interpreter.execute('echo "unterminated')
    assert result.exit_status == 2 and "unexpected EOF" in result.stderr
    result = interpreter.execute("sudo config save; hostname", input_lines=["y"])
    assert result.stdout.endswith("/etc/sonic/config_db.json\nleaf01\n")
    assert interpreter.execute("sudo config save").stderr == "Aborted!\n"


def test_half_declared_cabling_between_emulated_switches_is_rejected():
    spine = Switch(SwitchSpec("spine01", role="spine"))
    with pytest.raises(ValueError, match="does not list"):
        connect_fabric([Switch(leaf()), spine])


def test_bgp_session_follows_its_port():
    clock = FakeClock()
    switch = Switch(leaf(), clock=clock)
    clock.now += 90
    peer = switch.bgp_summary()["ipv4Unicast"]["peers"]["10.0.0.1"]
    assert peer["state"] == "Established" and peer["pfxRcd"] == 64
    assert peer["peerUptime"] == "00:01:30" and peer["peerUptimeMsec"] == 90_000
    switch.set_link_up("Ethernet8", False)
    peer = switch.bgp_summary()["ipv4Unicast"]["peers"]["10.0.0.1"]
    assert peer["state"] == "Active" and peer["pfxRcd"] == 0 and peer["connectionsDropped"] == 1


def test_spec_round_trips_through_json_and_rejects_typos():
    spec = leaf()
    assert SwitchSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(ValueError, match="neighbours"):
        SwitchSpec.from_dict({"hostname": "x", "neighbours": []})
    with pytest.raises(ValueError, match="unknown port"):
        Switch(SwitchSpec("leaf02", neighbors=[NeighborSpec("Ethernet4", "gpu", "mlx5_0")]))


def test_redis_backend_shares_one_server_between_switches():
    prefix = f"test-emulator-{uuid.uuid4().hex[:8]}:"
    numbers = dict.fromkeys(("APPL_DB", "COUNTERS_DB", "CONFIG_DB", "STATE_DB"), 14)
    first = RedisDatabase(prefix + "leaf01:", db_numbers=numbers)
    second = RedisDatabase(prefix + "leaf02:", db_numbers=numbers)
    raw = redis.Redis(db=14, decode_responses=True)
    try:
        Switch(leaf(), first)
        Switch(leaf(hostname="leaf02"), second)
        assert raw.hget(f"{prefix}leaf01:CONFIG_DB:PORT|Ethernet8", "admin_status") == "up"
        assert first.hget("APPL_DB", "PORT_TABLE:Ethernet8", "oper_status") == "up"
        assert first.keys("CONFIG_DB", "PORT|Ethernet51?") == ["PORT|Ethernet512",
                                                               "PORT|Ethernet513"]
        first.hset("CONFIG_DB", "PORT|Ethernet8", {"admin_status": "down"})
        assert second.hget("CONFIG_DB", "PORT|Ethernet8", "admin_status") == "up"
        assert first.dump("CONFIG_DB")["PORT|Ethernet8"]["admin_status"] == "down"
    finally:
        for key in raw.scan_iter(match=prefix + "*", count=1000):
            raw.delete(key)
        for client in (first, second):
            client.close()
        raw.close()
