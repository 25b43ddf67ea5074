from inventory.models.allocation import Allocation
from inventory.models.compute import GPU, GPUS_PER_NODE, NIC, RAILS, Node
from inventory.models.imports import TopologyImportRun
from inventory.models.network import Cable, CableStatus, Switch, SwitchPort
from inventory.models.revision import InventoryRevision
from inventory.models.topology import LifecycleStatus, Pod, Rack

__all__ = [
    "GPU",
    "GPUS_PER_NODE",
    "NIC",
    "RAILS",
    "Allocation",
    "Cable",
    "CableStatus",
    "InventoryRevision",
    "LifecycleStatus",
    "Node",
    "Pod",
    "Rack",
    "Switch",
    "SwitchPort",
    "TopologyImportRun",
]
