"""Redfish through OpenStack's sushy: power, resets, boot override, health, sensors, the event
log, firmware inventory and GPUs of one node's BMC.

sushy (the client Ironic drives every Redfish BMC with) handles the parts where BMCs differ most:
the reset action and the values it advertises (`ResetType@Redfish.AllowableValues`), boot
override through a Settings resource where the BMC has one, and session or Basic auth. What sushy
does not model (LogServices, Sensors, Processors' serials and UUIDs) is read as plain Redfish JSON
through sushy's own connector, so one authenticated HTTP session serves both.

Each call opens one connection with Basic auth (no session left behind on the BMC) and closes it.
Errors carry the BMC's own message; no message holds a secret (sushy puts the URL and the BMC's
answer in its errors, never the Authorization header).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import requests
import sushy
from django.conf import settings
from sushy import exceptions as sushy_errors
from sushy.auth import BasicAuth
from sushy.connector import Connector

from inventory.bmc.credentials import load_bmc_credentials
from inventory.bmc.drivers.base import (
    BmcDriver,
    BmcError,
    BmcGpu,
    BmcNotConfigured,
    BmcNotSupported,
    BmcRefused,
    BmcTarget,
    BmcUnreachable,
    BootOverride,
    FirmwareItem,
    LogEntry,
    Sensor,
    SystemHealth,
)

# A collection member that is only a link is fetched one by one; never more than this many.
MAX_MEMBERS = 500


class _Session:
    """One authenticated connection to a BMC: sushy's root and its connector for plain JSON."""

    def __init__(self, target: BmcTarget):
        credentials = load_bmc_credentials(target.credentials_ref)
        timeout = target.timeout or settings.BMC_TIMEOUT
        self.target = target
        # One attempt (sushy reads 0 as its default of 3, 2 s apart): a 5xx to a reset is the
        # BMC's answer, a page must not wait on retries, and the Action's own retry policy
        # decides what to do with an unreachable BMC.
        self.connector = Connector(
            target.base_url,
            verify=target.verify_tls,
            server_side_retries=1,
            server_side_retries_delay=1,
            default_request_timeout=timeout,
            connect_timeout=timeout,
        )
        self.root = sushy.Sushy(
            target.base_url,
            auth=BasicAuth(username=credentials.username, password=credentials.password),
            verify=target.verify_tls,
            connector=self.connector,
        )

    def system(self):
        if self.target.system_id:
            systems_path = _odata_path(self.root.json, "Systems") or "/redfish/v1/Systems"
            return self.root.get_system(f"{systems_path.rstrip('/')}/{self.target.system_id}")
        members = self.root.get_system_collection().members_identities
        if len(members) != 1:
            raise BmcNotConfigured(
                f"{self.target.hostname}: the BMC lists {len(members)} systems; set the "
                "node's BMC system id"
            )
        return self.root.get_system(next(iter(members)))

    def json(self, path: str) -> dict:
        return self.connector.get(path).json()

    def members(
        self, collection_path: str, limit: int = MAX_MEMBERS, *, both_ends: bool = False
    ) -> list[dict]:
        """The members of a collection as objects, fetching those given only as links.
        `both_ends`: the first and the last `limit` members, for a log whose order the BMC
        chooses (bmcweb lists the oldest entry first, iDRAC the newest)."""
        members = self.json(collection_path).get("Members") or []
        if both_ends and len(members) > 2 * limit:
            members = members[:limit] + members[-limit:]
        else:
            members = members[: 2 * limit if both_ends else limit]
        result = []
        for member in members:
            if not isinstance(member, dict):
                continue
            if set(member) <= {"@odata.id"} and member.get("@odata.id"):
                member = self.json(member["@odata.id"])
            result.append(member)
        return result

    def close(self) -> None:
        self.connector.close()


@contextlib.contextmanager
def _session(target: BmcTarget) -> Iterator[_Session]:
    session = None
    try:
        session = _Session(target)
        yield session
    except BmcError:
        raise
    except sushy_errors.ConnectionError as error:
        raise BmcUnreachable(f"{target.hostname}: BMC unreachable at {target.base_url}") from error
    except requests.RequestException as error:
        raise BmcUnreachable(f"{target.hostname}: BMC unreachable at {target.base_url}") from error
    except sushy_errors.AccessError as error:
        raise BmcRefused(
            f"{target.hostname}: the BMC refused the login {target.credentials_ref or 'default'!r}"
            f" ({error.status_code})",
            status_code=error.status_code,
        ) from error
    except sushy_errors.ResourceNotFoundError as error:
        raise BmcNotSupported(f"{target.hostname}: {_bmc_message(error)}") from error
    except sushy_errors.HTTPError as error:
        raise BmcRefused(
            f"{target.hostname}: {_bmc_message(error)}", status_code=error.status_code
        ) from error
    except (sushy_errors.MissingActionError, sushy_errors.MissingAttributeError) as error:
        raise BmcNotSupported(f"{target.hostname}: {error}") from error
    except sushy_errors.SushyError as error:
        raise BmcRefused(f"{target.hostname}: {error}") from error
    finally:
        if session is not None:
            session.close()


def _bmc_message(error: sushy_errors.HTTPError) -> str:
    """The BMC's own words: its Redfish error message, else sushy's account of the answer."""
    detail = error.detail or (error.body or {}).get("message")
    if detail:
        return f"the BMC answered {error.status_code}: {detail}"
    return f"the BMC answered {error.status_code}"


def _odata_path(resource: dict, key: str) -> str | None:
    link = resource.get(key)
    return link.get("@odata.id") if isinstance(link, dict) else None


def _status(resource: dict, key: str = "Health") -> str | None:
    status = resource.get("Status")
    return status.get(key) if isinstance(status, dict) else None


class RedfishDriver(BmcDriver):
    def power_state(self, target: BmcTarget) -> str:
        with _session(target) as session:
            state = session.system().power_state
            return state.value if state is not None else ""

    def allowed_reset_types(self, target: BmcTarget) -> frozenset[str]:
        with _session(target) as session:
            return frozenset(
                value.value for value in session.system().get_allowed_reset_system_values()
            )

    def reset(self, target: BmcTarget, reset_type: str) -> None:
        with _session(target) as session:
            system = session.system()
            allowed = {value.value for value in system.get_allowed_reset_system_values()}
            if reset_type not in allowed:
                raise BmcNotSupported(
                    f"{target.hostname}: the BMC does not offer {reset_type} "
                    f"(it offers {', '.join(sorted(allowed)) or 'none'})"
                )
            system.reset_system(sushy.ResetType(reset_type))

    def boot_override(self, target: BmcTarget) -> BootOverride:
        with _session(target) as session:
            boot = session.system().boot
            if boot is None:  # an HGX baseboard system has no Boot: it is not what boots
                raise BmcNotSupported(f"{target.hostname}: the system has no boot settings")
            return BootOverride(
                target=boot.target.value if boot.target else "None",
                enabled=boot.enabled.value if boot.enabled else "Disabled",
            )

    def set_boot_override(self, target: BmcTarget, device: str, *, once: bool = True) -> None:
        try:
            source = sushy.BootSource(device)
        except ValueError:
            raise BmcNotSupported(f"{device!r} is not a Redfish boot source") from None
        enabled = (
            sushy.BootSourceOverrideEnabled.ONCE if once
            else sushy.BootSourceOverrideEnabled.CONTINUOUS
        )
        with _session(target) as session:
            system = session.system()
            if system.boot is None:
                raise BmcNotSupported(f"{target.hostname}: the system has no boot settings")
            allowed = system.boot.allowed_values
            if allowed and device not in allowed:
                raise BmcNotSupported(
                    f"{target.hostname}: the BMC does not offer boot from {device} "
                    f"(it offers {', '.join(allowed)})"
                )
            system.set_system_boot_options(target=source, enabled=enabled)

    def reset_bmc(self, target: BmcTarget) -> str:
        with _session(target) as session:
            managers = session.system().managers
            if not managers:
                raise BmcNotSupported(f"{target.hostname}: the system names no manager")
            action = (managers[0].json.get("Actions") or {}).get("#Manager.Reset")
            if not isinstance(action, dict) or not action.get("target"):
                raise BmcNotSupported(f"{target.hostname}: the BMC does not offer Manager.Reset")
            # No AllowableValues: the BMC takes any ResetType, and GracefulRestart is the kind one.
            allowed = action.get("ResetType@Redfish.AllowableValues") or ["GracefulRestart"]
            for reset_type in ("GracefulRestart", "ForceRestart"):
                if reset_type in allowed:
                    session.connector.post(action["target"], data={"ResetType": reset_type})
                    return reset_type
            raise BmcNotSupported(
                f"{target.hostname}: the BMC offers no restart of itself "
                f"(Manager.Reset offers {', '.join(sorted(allowed))})"
            )

    def health(self, target: BmcTarget) -> SystemHealth:
        with _session(target) as session:
            system = session.system().json
            return SystemHealth(
                health=_status(system),
                # DSP0268 spells it HealthRollup; some BMCs (sushy-emulator) HealthRollUp.
                health_rollup=_status(system, "HealthRollup") or _status(system, "HealthRollUp"),
                state=_status(system, "State"),
                power_state=system.get("PowerState"),
                model=system.get("Model") or "",
                serial=system.get("SerialNumber") or "",
            )

    def sensors(self, target: BmcTarget) -> list[Sensor]:
        with _session(target) as session:
            chassis_links = (session.system().json.get("Links") or {}).get("Chassis") or []
            result: list[Sensor] = []
            for link in chassis_links:
                chassis = session.json(link["@odata.id"])
                sensors_path = _odata_path(chassis, "Sensors")
                if sensors_path:
                    result += [
                        Sensor(
                            name=member.get("Name") or member.get("Id", ""),
                            reading=member.get("Reading"),
                            units=member.get("ReadingUnits") or "",
                            kind=member.get("ReadingType") or "",
                            health=_status(member),
                        )
                        for member in session.members(sensors_path)
                    ]
                    continue
                result += _legacy_thermal_sensors(session, chassis)
            return result

    def event_log(self, target: BmcTarget, *, limit: int = 100) -> list[LogEntry]:
        with _session(target) as session:
            system = session.system()
            holders = [system.json] + [manager.json for manager in system.managers]
            services_paths = [_odata_path(holder, "LogServices") for holder in holders]
            services_paths = [path for path in services_paths if path]
            if not services_paths:
                raise BmcNotSupported(f"{target.hostname}: the BMC offers no LogServices")
            entries: list[LogEntry] = []
            for services_path in services_paths:
                for service in session.members(services_path):
                    entries_path = _odata_path(service, "Entries")
                    if not entries_path:
                        continue
                    # Either end may hold the newest: read both, sort, then cut.
                    for entry in session.members(entries_path, limit, both_ends=True):
                        entries.append(_log_entry(entry, service.get("Id", "")))
            entries.sort(key=lambda entry: entry.created, reverse=True)
            return entries[:limit]

    def firmware(self, target: BmcTarget) -> list[FirmwareItem]:
        with _session(target) as session:
            update_service_path = _odata_path(session.root.json, "UpdateService")
            if not update_service_path:
                raise BmcNotSupported(f"{target.hostname}: the BMC offers no UpdateService")
            inventory_path = _odata_path(session.json(update_service_path), "FirmwareInventory")
            if not inventory_path:
                raise BmcNotSupported(f"{target.hostname}: the BMC offers no FirmwareInventory")
            return [
                FirmwareItem(
                    id=member.get("Id", ""),
                    name=member.get("Name") or member.get("Id", ""),
                    version=member.get("Version") or "",
                    updateable=member.get("Updateable"),
                )
                for member in session.members(inventory_path)
            ]

    def gpus(self, target: BmcTarget) -> list[BmcGpu]:
        # Every system the BMC lists: an HGX BMC puts the GPUs under a baseboard system
        # (HGX_Baseboard_0), not under the host's.
        with _session(target) as session:
            result: list[BmcGpu] = []
            for system_path in session.root.get_system_collection().members_identities:
                processors_path = _odata_path(session.json(system_path), "Processors")
                if not processors_path:
                    continue
                for processor in session.members(processors_path):
                    if processor.get("ProcessorType") != "GPU":
                        continue
                    result.append(
                        BmcGpu(
                            bmc_id=processor.get("Id", ""),
                            serial=processor.get("SerialNumber") or "",
                            uuid=processor.get("UUID") or "",
                            model=processor.get("Model") or "",
                            health=_status(processor),
                        )
                    )
            return result


def _log_entry(entry: dict, log: str) -> LogEntry:
    return LogEntry(
        id=str(entry.get("Id", "")),
        created=entry.get("Created") or "",
        severity=entry.get("Severity") or "",
        message=entry.get("Message") or "",
        entry_type=entry.get("EntryType") or "",
        sensor_type=entry.get("SensorType") or "",
        log=log,
    )


def _legacy_thermal_sensors(session: _Session, chassis: dict) -> list[Sensor]:
    """Chassis without a Sensors collection (older BMCs): Thermal's temperatures and fans."""
    thermal_path = _odata_path(chassis, "Thermal")
    if not thermal_path:
        return []
    thermal = session.json(thermal_path)
    sensors = [
        Sensor(
            name=item.get("Name", ""),
            reading=item.get("ReadingCelsius"),
            units="Cel",
            kind="Temperature",
            health=_status(item),
        )
        for item in thermal.get("Temperatures") or []
    ]
    sensors += [
        Sensor(
            name=item.get("Name", ""),
            reading=item.get("Reading"),
            units=item.get("ReadingUnits") or "RPM",
            kind="Rotational",
            health=_status(item),
        )
        for item in thermal.get("Fans") or []
    ]
    return sensors
