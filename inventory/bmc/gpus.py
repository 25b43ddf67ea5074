"""Which inventory GPU a BMC's GPU is: by serial or UUID, never by position.

HGX BMCs name their GPUs GPU_SXM_1..8 in the baseboard's order, which is not nvidia-smi's index
order, so matching by number would put one GPU's health on another's row.
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory.bmc.drivers.base import BmcGpu
from inventory.models import GPU


@dataclass(frozen=True)
class GpuMatch:
    bmc: BmcGpu
    gpu: GPU | None  # None: the inventory knows no GPU of this serial or UUID on the node
    matched_by: str  # "serial", "uuid" or ""


def _uuid_key(value: str) -> str:
    return value.strip().lower().removeprefix("gpu-")


def match_gpus(node, bmc_gpus: list[BmcGpu]) -> list[GpuMatch]:
    gpus = list(GPU.objects.filter(node=node))
    by_serial = {gpu.serial.strip(): gpu for gpu in gpus if gpu.serial.strip()}
    by_uuid = {_uuid_key(gpu.uuid): gpu for gpu in gpus if gpu.uuid.strip()}
    matches = []
    for bmc_gpu in bmc_gpus:
        if bmc_gpu.serial.strip() in by_serial:
            matches.append(GpuMatch(bmc_gpu, by_serial[bmc_gpu.serial.strip()], "serial"))
        elif bmc_gpu.uuid and _uuid_key(bmc_gpu.uuid) in by_uuid:
            matches.append(GpuMatch(bmc_gpu, by_uuid[_uuid_key(bmc_gpu.uuid)], "uuid"))
        else:
            matches.append(GpuMatch(bmc_gpu, None, ""))
    return matches
