"""SONiC switch emulator: Edgecore AIS800-64O switches served over SSH, without Django.

The emulator keeps each switch's state in SONiC's own database layout (CONFIG_DB, APPL_DB,
STATE_DB, COUNTERS_DB), answers the commands a SONiC box answers with the same output and
exit statuses, and moves counters with simulated RoCE traffic. `serve_fabric()` (or
`python -m fabric.emulator`) puts many switches behind SSH in one process.
"""

from .commands import CommandInterpreter, CommandResult
from .database import Database, MemoryDatabase, RedisDatabase
from .server import DEFAULT_PASSWORD, FabricServer, serve_fabric
from .spec import BgpPeerSpec, NeighborSpec, SwitchSpec, generic_specs, load_specs
from .switch import Switch, connect_fabric
from .traffic import TrafficModel

__all__ = [
    "DEFAULT_PASSWORD",
    "BgpPeerSpec",
    "CommandInterpreter",
    "CommandResult",
    "Database",
    "FabricServer",
    "MemoryDatabase",
    "NeighborSpec",
    "RedisDatabase",
    "Switch",
    "SwitchSpec",
    "TrafficModel",
    "connect_fabric",
    "generic_specs",
    "load_specs",
    "serve_fabric",
]
