"""The jump box's search: one query string, every kind of object an operator names in a page.

An operator pastes whatever a message or a log gave them: a hostname or a Slurm hostlist, a job
id, a ticket number (`FT-12`), a serial, a MAC, a GPU UUID, a switch, `switch:port` or a
management IP. `search` answers the objects of every kind that match, each with the page that
shows it, through the same selectors the pages and the API use, so a role finds only what it may
open (a tenant admin: their nodes and jobs; a viewer: no jobs).

`SearchResult.jump` is the one page to go to when the query names exactly one thing (an exact
hostname, job id, ticket or port); the header's jump box goes straight there.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db.models import Q
from django.urls import reverse

from faults.selectors import ticket_get
from inventory.hostlist import expand_hostlist
from inventory.models import SwitchPort
from inventory.selectors import hardware_search, node_list, switch_list
from jobs.selectors import visible_jobs
from portal.errors import InvalidInput
from portal.roles import may

MAX_QUERY_LENGTH = 200
LIMIT_PER_KIND = 10

_TICKET = re.compile(r"^(?:FT-?|#)(\d+)$", re.IGNORECASE)
_MAC = re.compile(r"^[0-9a-f]{2}([:-][0-9a-f]{2}){5}$", re.IGNORECASE)
# `leaf-p1-r3:Ethernet8`; a MAC or an IPv6 address has more than one colon and is read first.
_SWITCH_PORT = re.compile(r"^([A-Za-z0-9._-]+):([A-Za-z0-9/._()-]+)$")
_JOB_ID = re.compile(r"^\d+(?:[_+]\d+)?$")
# `leaf-p1-r3 Ethernet8`: a switch and a port separated by spaces, as pasted from a table.
_SWITCH_SPACE_PORT = re.compile(r"^([A-Za-z0-9._-]+)\s+([A-Za-z0-9/._()-]+)$")
# `gpu12` for gpu012: a name typed without its zero padding (or with too much).
_NAME_NUMBER = re.compile(r"^([A-Za-z][A-Za-z0-9._-]*?)(\d+)$")


@dataclass(frozen=True)
class SearchHit:
    kind: str  # node, hostlist, gpu, nic, switch, port, job, ticket
    label: str
    detail: str
    url: str
    exact: bool = False  # the query names this object itself, not a fragment of it


@dataclass
class SearchResult:
    query: str
    hits: list[SearchHit] = field(default_factory=list)

    @property
    def jump(self) -> SearchHit | None:
        """The single object the query names, if it names exactly one."""
        exact = [hit for hit in self.hits if hit.exact]
        if len(exact) == 1:
            return exact[0]
        if not exact and len(self.hits) == 1:
            return self.hits[0]
        return None


def search(*, user, query: str) -> SearchResult:
    """Every object `user` may see that `query` names; InvalidInput (field `q`) for a query too
    short or too long to mean anything. A bounded number of queries per kind."""
    text = (query or "").strip()
    if len(text) < 2:
        raise InvalidInput({"q": ["Type at least two characters: a hostname, job id, FT-n, "
                                  "serial, MAC, GPU UUID, switch, switch:port or IP."]})
    if len(text) > MAX_QUERY_LENGTH:
        raise InvalidInput({"q": [f"At most {MAX_QUERY_LENGTH} characters."]})
    result = SearchResult(query=text)
    hits = result.hits
    hits += _tickets(user, text)
    hits += _jobs(user, text)
    address = _ip_address(text)
    if address is not None:
        hits += _switches_at(user, address)
        return result
    if "[" in text or "," in text:
        hits += _hostlist(user, text)
        return result
    if not _MAC.match(text):
        port_match = _SWITCH_PORT.match(text)
        if port_match:
            hits += _port(user, *port_match.groups())
            return result
        spaced = _SWITCH_SPACE_PORT.match(text)
        found = _port(user, *spaced.groups()) if spaced else []
        if found:  # otherwise two words that are not a switch and its port: search on
            hits += found
            return result
    hits += _switches(user, text)
    hits += _hardware(user, text)
    if not any(hit.exact for hit in hits):
        hits += _renumbered(user, text, fragments=hits)
    if not hits:
        hits += _port_aliases(user, text)
    return result


def _ip_address(text: str):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _tickets(user, text: str) -> list[SearchHit]:
    match = _TICKET.match(text)
    if not match or not may(user, "read_faults"):
        return []
    ticket = ticket_get(user=user, pk=int(match.group(1)))
    if ticket is None:
        return []
    return [SearchHit("ticket", ticket.reference, f"{ticket.get_status_display()} · "
                      f"{ticket.summary}", reverse("faults:ticket", args=[ticket.pk]), exact=True)]


def _jobs(user, text: str) -> list[SearchHit]:
    if not _JOB_ID.match(text):
        return []
    jobs = visible_jobs(user=user).filter(job_id=text).only("job_id", "name", "user", "state")
    return [
        SearchHit("job", f"job {job.job_id}", f"{job.name} · {job.user} · {job.state}",
                  reverse("jobs:job-detail", args=[job.job_id]), exact=True)
        for job in jobs[:1]
    ]


def _node_hit(node, *, exact: bool) -> SearchHit:
    where = " · ".join(part for part in (
        node.pod.name if node.pod_id else "", node.rack.name if node.rack_id else "",
        node.serial, node.slurm_state) if part)
    return SearchHit("node", node.hostname, where,
                     reverse("inventory:node-detail", args=[node.hostname]), exact=exact)


def _hostlist(user, text: str) -> list[SearchHit]:
    hostnames = expand_hostlist(text, field="q")  # InvalidInput naming `q` when malformed
    nodes = list(node_list(user=user, filters={"hostlist": text}).order_by("hostname"))
    if len(nodes) == 1:
        return [_node_hit(nodes[0], exact=True)]
    if not nodes:
        return []
    url = reverse("inventory:node-list") + "?" + urlencode({"hostlist": text})
    missing = len(hostnames) - len(nodes)
    detail = f"{len(nodes)} nodes" + (f" ({missing} not found)" if missing > 0 else "")
    return [SearchHit("hostlist", text, detail, url, exact=True)]


def _switch_hit(switch, *, exact: bool) -> SearchHit:
    detail = " · ".join(str(part) for part in (
        switch.get_role_display(), f"pod {switch.pod.name}" if switch.pod_id else "",
        switch.serial, switch.management_address or "") if part)
    return SearchHit("switch", switch.hostname, detail,
                     reverse("fabric:switch-detail", args=[switch.hostname]), exact=exact)


def _switches_at(user, address) -> list[SearchHit]:
    switches = switch_list(user=user).filter(management_address=str(address))
    return [_switch_hit(switch, exact=True) for switch in switches[:LIMIT_PER_KIND]]


def _switches(user, text: str) -> list[SearchHit]:
    switches = switch_list(user=user).filter(
        Q(hostname__icontains=text) | Q(serial__iexact=text)
    ).order_by("hostname")[:LIMIT_PER_KIND]
    return [
        _switch_hit(switch, exact=text.lower() in (switch.hostname.lower(), switch.serial.lower()))
        for switch in switches
    ]


def _port(user, switch_name: str, port_name: str) -> list[SearchHit]:
    switch = switch_list(user=user).filter(hostname__iexact=switch_name).first()
    if switch is None:
        return []
    port = switch.ports.filter(Q(name__iexact=port_name) | Q(alias__iexact=port_name)).first()
    if port is None:
        return []
    port.switch = switch
    return [_port_hit(port, exact=True)]


def _port_hit(port, *, exact: bool) -> SearchHit:
    switch = port.switch
    url = reverse("fabric:switch-detail", args=[switch.hostname]) + f"#port-{port.name}"
    detail = f"{port.speed_gbps}G" + (f" · {port.alias}" if port.alias else "")
    return SearchHit("port", f"{switch.hostname}:{port.name}", detail, url, exact=exact)


def _renumbered(user, text: str, *, fragments: list[SearchHit]) -> list[SearchHit]:
    """The node `text` names but for zero padding: `gpu12` is gpu012, `gpu0012` too. It is the
    jump only when nothing else matched: `gpu01` may be gpu011 half typed, so it lists gpu010-019
    and gpu001 without jumping."""
    match = _NAME_NUMBER.match(text)
    if not match:
        return []
    prefix, digits = match.groups()
    pattern = rf"^{re.escape(prefix)}0*{int(digits)}$"
    nodes = node_list(user=user).filter(hostname__iregex=pattern).select_related("pod", "rack")
    seen = {hit.label for hit in fragments}
    return [_node_hit(node, exact=not fragments)
            for node in nodes.order_by("hostname")[:LIMIT_PER_KIND] if node.hostname not in seen]


def _port_aliases(user, text: str) -> list[SearchHit]:
    """Ports whose alias is `text` (`Eth3/1(Port3)`, as SONiC's CONFIG_DB names them), on every
    switch the user may see: an alias repeats from switch to switch, so none is exact."""
    if " " in text or len(text) > 64:
        return []
    switches = switch_list(user=user)
    ports = (
        SwitchPort.objects.filter(switch__in=switches, alias__iexact=text)
        .select_related("switch")
        .order_by("switch__hostname", "name")[:LIMIT_PER_KIND]
    )
    return [_port_hit(port, exact=False) for port in ports]


def _hardware(user, text: str) -> list[SearchHit]:
    found = hardware_search(user=user, query=text, limit=LIMIT_PER_KIND)
    needle = text.lower()
    mac = needle.replace("-", ":")
    hits = [
        _node_hit(node, exact=needle in (node.hostname.lower(), node.serial.lower()))
        for node in found.nodes
    ]
    for gpu in found.gpus:
        node_url = reverse("inventory:node-detail", args=[gpu.node.hostname])
        hits.append(SearchHit(
            "gpu", f"{gpu.node.hostname} GPU {gpu.index}",
            " · ".join(part for part in (gpu.uuid, gpu.serial, gpu.pci_bus_id) if part),
            f"{node_url}#gpu-{gpu.index}",
            exact=needle in (gpu.uuid.lower(), gpu.serial.lower(), gpu.pci_bus_id.lower()),
        ))
    for nic in found.nics:
        hits.append(SearchHit(
            "nic", f"{nic.node.hostname} {nic.device}",
            " · ".join(part for part in (nic.netdev, nic.mac, nic.get_role_display()) if part),
            reverse("inventory:nic-trace", args=[nic.node.hostname, nic.device]),
            exact=mac == nic.mac.lower(),
        ))
    return hits
