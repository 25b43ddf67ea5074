"""BGP sessions of an emulated switch and FRR's `show bgp ipv4 summary json` rendering."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .spec import BgpPeerSpec

ESTABLISHED = "Established"
# What FRR reports for a session whose link went away and that keeps trying to connect.
RECONNECTING = "Active"
# A dumped peer whose state the dump does not record (no STATE_DB NEIGH_STATE_TABLE entry).
# FRR itself never prints this: the emulator says it cannot know rather than invent a state.
UNKNOWN = "Unknown"


@dataclass
class BgpSession:
    """Runtime state of one neighbor; `established_since` is on the switch's clock."""

    spec: BgpPeerSpec
    established_since: float | None = None
    connections_established: int = 0
    connections_dropped: int = 0

    @property
    def established(self) -> bool:
        return self.established_since is not None

    def establish(self, now: float) -> None:
        if self.spec.state == ESTABLISHED and not self.established:
            self.established_since = now
            self.connections_established += 1

    def drop(self) -> None:
        if self.established:
            self.established_since = None
            self.connections_dropped += 1

    @property
    def state(self) -> str:
        if self.established:
            return ESTABLISHED
        return RECONNECTING if self.spec.state == ESTABLISHED else self.spec.state


def frr_uptime(seconds: float) -> str:
    """FRR's peer uptime text: 01:02:03 under a day, 1d02h03m under a week, then 01w2d03h."""
    total = int(seconds)
    minutes, secs = divmod(total, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days == 0:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"
    if days < 7:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    weeks, days = divmod(days, 7)
    return f"{weeks:02d}w{days}d{hours:02d}h"


def summary_json(
    router_id: str, local_as: int, sessions: list[BgpSession], now: float
) -> dict[str, object]:
    """The object FRR prints for `show bgp ipv4 summary json` (FRR 8.x field names)."""
    peers: dict[str, object] = {}
    for session in sessions:
        spec = session.spec
        uptime = now - session.established_since if session.established_since is not None else 0
        peer: dict[str, object] = {
            "hostname": spec.hostname or spec.address,
            "remoteAs": spec.remote_as,
            "localAs": local_as,
            "version": 4,
            "msgRcvd": int(uptime / 3) + 5 if session.established else 0,
            "msgSent": int(uptime / 3) + 5 if session.established else 0,
            "tableVersion": 0,
            "outq": 0,
            "inq": 0,
            "peerUptime": frr_uptime(uptime) if session.established else "never",
            "peerUptimeMsec": int(uptime * 1000),
            "peerUptimeEstablishedEpoch": int(time.time() - uptime) if session.established else 0,
            "pfxRcd": spec.prefixes_received if session.established else 0,
            "state": session.state,
            "peerState": "OK",
            "connectionsEstablished": session.connections_established,
            "connectionsDropped": session.connections_dropped,
            "desc": spec.hostname or spec.address,
            "idType": "ipv4",
        }
        if session.established:
            peer["pfxSnt"] = spec.prefixes_sent
        peers[spec.address] = peer
    failed = sum(1 for session in sessions if not session.established)
    return {
        "ipv4Unicast": {
            "routerId": router_id,
            "as": local_as,
            "vrfId": 0,
            "vrfName": "default",
            "tableVersion": sum(s.spec.prefixes_received for s in sessions if s.established),
            "peerCount": len(sessions),
            "peers": peers,
            "failedPeers": failed,
            "displayedPeers": len(sessions),
            "totalPeers": len(sessions),
            "dynamicPeers": 0,
            "bestPath": {"multiPathRelax": "true"},
        }
    }
