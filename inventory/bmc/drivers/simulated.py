"""The demo's BMCs: each node's Redfish system simulated, with the behaviour the Redfish driver
meets on sushy-emulator and real BMCs.

- A power change lands `BMC_SIMULATOR_POWER_DELAY_SECONDS` after the request (sushy-emulator:
  1-11 s); a restart reads Off until then.
- ComputerSystem.Reset advertises what sushy-emulator advertises (no PowerCycle); Nmi is
  advertised but answers 501, as there.
- A boot override set "Once" reads back "Once" (sushy-emulator's reads back "Continuous").
- The event log, sensors, firmware inventory and an HGX-style GPU tree (GPU_SXM_n, numbered
  unlike nvidia-smi, identified by the inventory's serials and UUIDs) exist, which
  sushy-emulator lacks.

State lives in one JSON file (`BMC_SIMULATOR_STATE_FILE`) under an exclusive lock, so the web
process and the worker see the same BMCs. Every node starts On.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from inventory.bmc.drivers.base import (
    POWER_OFF,
    POWER_ON,
    BmcDriver,
    BmcGpu,
    BmcNotSupported,
    BmcRefused,
    BmcTarget,
    BootOverride,
    FirmwareItem,
    LogEntry,
    Sensor,
    SystemHealth,
)

ALLOWED_RESET_TYPES = frozenset(
    {"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"}
)
BOOT_TARGETS = ("None", "Pxe", "Cd", "Hdd", "BiosSetup", "UefiHttp")
# HGX baseboards name their GPUs GPU_SXM_1..8 in the baseboard's order, not nvidia-smi's.
HGX_SXM_SLOT_BY_INDEX = (5, 7, 6, 8, 3, 1, 4, 2)
MAX_LOG_ENTRIES = 200


def _now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


class SimulatedDriver(BmcDriver):
    @contextmanager
    def _state(self) -> Iterator[dict]:
        path = Path(settings.BMC_SIMULATOR_STATE_FILE)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(path.suffix + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = json.loads(path.read_text()) if path.exists() else {}
            except ValueError:
                state = {}
            yield state
            temporary = path.with_suffix(path.suffix + ".tmp")
            temporary.write_text(json.dumps(state))
            temporary.replace(path)

    def _system(self, state: dict, target: BmcTarget) -> dict:
        system = state.setdefault(
            target.hostname,
            {
                "power_state": POWER_ON,
                "pending": None,
                "boot": {"target": "None", "enabled": "Disabled"},
                "log": [
                    {"id": "1", "created": _now_iso(), "severity": "OK",
                     "message": "System AC power on", "sensor_type": "Power Unit"},
                ],
                "bmc_resets": 0,
            },
        )
        pending = system.get("pending")
        if pending and time.time() >= pending["apply_at"]:
            system["power_state"] = pending["state"]
            system["pending"] = None
            self._log(system, "OK", f"Host power {pending['state'].lower()}", "System Event")
        return system

    @staticmethod
    def _log(system: dict, severity: str, message: str, sensor_type: str) -> None:
        log = system["log"]
        next_id = str(int(log[-1]["id"]) + 1 if log else 1)
        log.append({"id": next_id, "created": _now_iso(), "severity": severity,
                    "message": message, "sensor_type": sensor_type})
        del log[:-MAX_LOG_ENTRIES]

    def power_state(self, target: BmcTarget) -> str:
        with self._state() as state:
            return self._system(state, target)["power_state"]

    def allowed_reset_types(self, target: BmcTarget) -> frozenset[str]:
        return ALLOWED_RESET_TYPES

    def reset(self, target: BmcTarget, reset_type: str) -> None:
        if reset_type not in ALLOWED_RESET_TYPES:
            raise BmcNotSupported(
                f"{target.hostname}: the BMC does not offer {reset_type} "
                f"(it offers {', '.join(sorted(ALLOWED_RESET_TYPES))})"
            )
        if reset_type == "Nmi":
            raise BmcRefused(
                f"{target.hostname}: the BMC answered 501: Power state Nmi is not supported",
                status_code=501,
            )
        with self._state() as state:
            system = self._system(state, target)
            apply_at = time.time() + settings.BMC_SIMULATOR_POWER_DELAY_SECONDS
            if reset_type in ("On", "ForceOn"):
                wanted = POWER_ON
            elif reset_type in ("ForceOff", "GracefulShutdown"):
                wanted = POWER_OFF
            else:  # GracefulRestart, ForceRestart: down now, up after the delay
                system["power_state"] = POWER_OFF
                wanted = POWER_ON
            if system["power_state"] != wanted:
                system["pending"] = {"state": wanted, "apply_at": apply_at}
            self._log(system, "OK", f"ComputerSystem.Reset {reset_type} requested",
                      "System Event")

    def boot_override(self, target: BmcTarget) -> BootOverride:
        with self._state() as state:
            boot = self._system(state, target)["boot"]
            return BootOverride(target=boot["target"], enabled=boot["enabled"])

    def set_boot_override(self, target: BmcTarget, device: str, *, once: bool = True) -> None:
        if device not in BOOT_TARGETS:
            raise BmcNotSupported(
                f"{target.hostname}: the BMC does not offer boot from {device} "
                f"(it offers {', '.join(BOOT_TARGETS)})"
            )
        with self._state() as state:
            self._system(state, target)["boot"] = {
                "target": device, "enabled": "Once" if once else "Continuous"
            }

    def reset_bmc(self, target: BmcTarget) -> str:
        with self._state() as state:
            system = self._system(state, target)
            system["bmc_resets"] += 1
            self._log(system, "OK", "BMC reset (GracefulRestart)", "Management Subsystem Health")
        return "GracefulRestart"

    def health(self, target: BmcTarget) -> SystemHealth:
        with self._state() as state:
            system = self._system(state, target)
            return SystemHealth(
                health="OK", health_rollup="OK", state="Enabled",
                power_state=system["power_state"], model="Simulated HGX H100 8-GPU",
            )

    def sensors(self, target: BmcTarget) -> list[Sensor]:
        powered = self.power_state(target) == POWER_ON
        return [
            Sensor("CPU1 Temp", 54.0 if powered else 24.0, "Cel", "Temperature", "OK"),
            Sensor("CPU2 Temp", 52.0 if powered else 24.0, "Cel", "Temperature", "OK"),
            Sensor("Inlet Temp", 23.0, "Cel", "Temperature", "OK"),
            Sensor("FAN1", 9800.0 if powered else 0.0, "RPM", "Rotational", "OK"),
            Sensor("PSU Input Power", 6200.0 if powered else 45.0, "W", "Power", "OK"),
        ]

    def event_log(self, target: BmcTarget, *, limit: int = 100) -> list[LogEntry]:
        with self._state() as state:
            entries = self._system(state, target)["log"]
            return [
                LogEntry(id=entry["id"], created=entry["created"], severity=entry["severity"],
                         message=entry["message"], entry_type="SEL",
                         sensor_type=entry["sensor_type"], log="SEL")
                for entry in reversed(entries[-limit:])
            ]

    def firmware(self, target: BmcTarget) -> list[FirmwareItem]:
        return [
            FirmwareItem("BMC", "BMC firmware", "01.02.05", True),
            FirmwareItem("BIOS", "BIOS", "2.1.V3", True),
            FirmwareItem("HGX_FW_GPU_SXM_1", "HGX GPU firmware", "96.00.89.00.01", True),
        ]

    def gpus(self, target: BmcTarget) -> list[BmcGpu]:
        # The simulated baseboard holds the GPUs the inventory records, under HGX names.
        from inventory.models import GPU

        return [
            BmcGpu(
                bmc_id=f"GPU_SXM_{HGX_SXM_SLOT_BY_INDEX[gpu.index]}",
                serial=gpu.serial,
                uuid=gpu.uuid.removeprefix("GPU-"),
                model=gpu.model,
                health="OK",
            )
            for gpu in GPU.objects.filter(node__hostname=target.hostname).order_by("index")
        ]
