"""The BMC driver interface: what the portal asks of one node's BMC over Redfish.

Implementations, chosen by dotted path in `settings.BMC_DRIVER`:
- `inventory.bmc.drivers.redfish.RedfishDriver`: Redfish through sushy (a real BMC; sushy-emulator
  in tests, `scripts/bmc-up`);
- `inventory.bmc.drivers.simulated.SimulatedDriver`: the demo's BMCs, with the same behaviour
  (power changes land after a delay, the reset types a BMC advertises, refusals in the BMC's
  words).
Drivers return these dataclasses, never models, and raise only the errors below. Policy (which
reset type makes a power cycle, waiting for the target state) lives in `inventory.bmc.power`,
above the driver, so both drivers are held to it alike.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache

from django.conf import settings

# Redfish PowerState values (DSP0268 Resource.PowerState).
POWER_ON = "On"
POWER_OFF = "Off"
POWERING_ON = "PoweringOn"
POWERING_OFF = "PoweringOff"


class BmcError(Exception):
    """Base class of everything a BMC driver raises. The message never holds a secret."""


class BmcUnreachable(BmcError):
    """The BMC did not answer (connection refused, timeout): worth retrying."""


class BmcNotConfigured(BmcError):
    """The node has no BMC address or endpoint, or its credentials are missing."""


class BmcRefused(BmcError):
    """The BMC answered and refused the request; the message is the BMC's own."""

    def __init__(self, message: str, *, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class BmcNotSupported(BmcError):
    """The BMC does not offer this (no such action, collection or reset type)."""


@dataclass(frozen=True)
class BmcTarget:
    """How to reach one node's BMC. `credentials_ref` names an entry in the credentials store;
    `system_id` is the ComputerSystem's Id (blank: the only system the BMC lists)."""

    hostname: str
    base_url: str
    system_id: str = ""
    credentials_ref: str = ""
    verify_tls: bool = True
    timeout: float | None = None  # seconds per request; None: settings.BMC_TIMEOUT


@dataclass(frozen=True)
class BootOverride:
    target: str  # Redfish BootSourceOverrideTarget: None, Pxe, Hdd, Cd, BiosSetup, ...
    enabled: str  # Disabled, Once, Continuous


@dataclass(frozen=True)
class SystemHealth:
    health: str | None  # Redfish Status.Health: OK, Warning, Critical; None when not reported
    health_rollup: str | None
    state: str | None  # Status.State: Enabled, StandbyOffline, ...
    power_state: str | None
    model: str = ""
    serial: str = ""


@dataclass(frozen=True)
class Sensor:
    name: str
    reading: float | None
    units: str
    kind: str  # Temperature, Power, Voltage, Rotational, ...
    health: str | None = None


@dataclass(frozen=True)
class LogEntry:
    id: str
    created: str  # ISO 8601 as the BMC wrote it
    severity: str  # OK, Warning, Critical
    message: str
    entry_type: str = ""  # SEL, Event, Oem
    sensor_type: str = ""
    log: str = ""  # the LogService's Id


@dataclass(frozen=True)
class FirmwareItem:
    id: str
    name: str
    version: str
    updateable: bool | None = None


@dataclass(frozen=True)
class BmcGpu:
    """A GPU as the BMC sees it. `bmc_id` is the BMC's own name (HGX: GPU_SXM_1..8, numbered
    unlike nvidia-smi's index), so GPUs are matched to inventory by serial or UUID only."""

    bmc_id: str
    serial: str
    uuid: str
    model: str = ""
    health: str | None = None


class BmcDriver(ABC):
    """One implementation talks to every node's BMC; each call names its target."""

    @abstractmethod
    def power_state(self, target: BmcTarget) -> str:
        """The system's PowerState (On, Off, PoweringOn, PoweringOff)."""

    @abstractmethod
    def allowed_reset_types(self, target: BmcTarget) -> frozenset[str]:
        """The ResetType values ComputerSystem.Reset advertises."""

    @abstractmethod
    def reset(self, target: BmcTarget, reset_type: str) -> None:
        """POST ComputerSystem.Reset with `reset_type`; returns once the BMC accepted it (the
        change itself may land later). A reset type the BMC does not advertise is
        `BmcNotSupported`; one it refuses is `BmcRefused` with its message."""

    @abstractmethod
    def boot_override(self, target: BmcTarget) -> BootOverride:
        """The boot source override as the BMC reads it back."""

    @abstractmethod
    def set_boot_override(self, target: BmcTarget, device: str, *, once: bool = True) -> None:
        """Boot from `device` at the next boot only (`once`) or until changed."""

    @abstractmethod
    def reset_bmc(self, target: BmcTarget) -> str:
        """Manager.Reset of the BMC managing the system (the host keeps running). Returns the
        reset type used."""

    @abstractmethod
    def health(self, target: BmcTarget) -> SystemHealth:
        """The system's Status and power state."""

    @abstractmethod
    def sensors(self, target: BmcTarget) -> list[Sensor]:
        """Readings of the chassis' Sensors collection."""

    @abstractmethod
    def event_log(self, target: BmcTarget, *, limit: int = 100) -> list[LogEntry]:
        """Newest-first entries of the system's LogServices (the SEL among them)."""

    @abstractmethod
    def firmware(self, target: BmcTarget) -> list[FirmwareItem]:
        """UpdateService.FirmwareInventory."""

    @abstractmethod
    def gpus(self, target: BmcTarget) -> list[BmcGpu]:
        """Processors of type GPU in every system the BMC lists (HGX baseboards included)."""


@cache
def get_bmc_driver() -> BmcDriver:
    """The driver named in settings.BMC_DRIVER, one instance per process."""
    module_name, _, class_name = settings.BMC_DRIVER.rpartition(".")
    driver_class = getattr(importlib.import_module(module_name), class_name)
    return driver_class()


def reset_bmc_driver() -> None:
    """Forget the cached driver (tests that change settings.BMC_DRIVER call it)."""
    get_bmc_driver.cache_clear()
