from inventory.models.allocation import Allocation
from inventory.models.compute import GPU, GPUS_PER_NODE, NIC, RAILS, Node
from inventory.models.history import ROW_KINDS, ComponentKind, ComponentSwap
from inventory.models.imports import TopologyImportRun
from inventory.models.network import Cable, CableStatus, Switch, SwitchPort
from inventory.models.revision import InventoryRevision
from inventory.models.spares import ReservationStatus, SpareReservation, SpareStock
from inventory.models.topology import LifecycleStatus, Pod, Rack

__all__ = [
    "GPU",
    "GPUS_PER_NODE",
    "NIC",
    "RAILS",
    "ROW_KINDS",
    "Allocation",
    "Cable",
    "CableStatus",
    "ComponentKind",
    "ComponentSwap",
    "InventoryRevision",
    "LifecycleStatus",
    "Node",
    "Pod",
    "Rack",
    "ReservationStatus",
    "SpareReservation",
    "SpareStock",
    "Switch",
    "SwitchPort",
    "TopologyImportRun",
]
