"""`config`: the write side of sonic-utilities, for the commands the portal drives.

Behaviour and messages follow sonic-utilities 202311: the `config` group refuses to run
without root ("Root privileges are required for this operation", exit 1) after resolving the
subcommand name; `config ecn`, `config mmu` and `config interface pfc priority` hand over to
the ecnconfig, mmuconfig and pfc scripts (`qos.py`), whose messages and exit statuses pass
through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from ..database import CONFIG_DB
from ..switch import DEFAULT_CONFIG_FILE
from .buffer import buffer, interface_buffer
from .common import (
    Argument,
    ClickCommand,
    ClickGroup,
    CommandResult,
    Context,
    Handler,
    Option,
    aborted,
    click_command,
    fail,
    lines,
    natural_key,
    ok,
    parse_interface_filter,
)
from .qos import set_buffer_threshold, set_pfc_priority, set_wred_profile


def _require_root(ctx: Context) -> CommandResult | None:
    if ctx.root:
        return None
    # click's `exit("...")`: the message on stderr, exit status 1.
    return fail("Root privileges are required for this operation\n")


def confirm(question: str, proceed: Callable[[], CommandResult]) -> CommandResult:
    """click.confirm(question, abort=True): `[y/N]` prompt, EOF or "no" aborts."""
    prompt = f"{question} [y/N]: "

    def answer(line: str | None) -> CommandResult:
        if line is None:
            return aborted()
        reply = line.strip().lower()
        if reply in ("y", "yes"):
            return proceed()
        if reply in ("n", "no", ""):
            return aborted()
        return CommandResult(stdout=f"Error: invalid input\n{prompt}", continuation=answer)

    return CommandResult(stdout=prompt, continuation=answer)


# -- save / reload -------------------------------------------------------------------------

SAVE = ClickCommand(
    "config save",
    (Option(("-y", "--yes"), "yes", kind="flag"),),
    (Argument("filename", "[FILENAME]", required=False),),
    help_text="Export current config DB to a file on disk.",
)


def _save(ctx: Context, values: dict) -> CommandResult:
    path = values["filename"] or DEFAULT_CONFIG_FILE

    def proceed() -> CommandResult:
        ctx.switch.save_config(path)
        return ok(f"Running command: /usr/local/bin/sonic-cfggen -d --print-data > {path}\n")

    if values["yes"]:
        return proceed()
    return confirm("Existing files will be overwritten, continue?", proceed)


RELOAD = ClickCommand(
    "config reload",
    (
        Option(("-y", "--yes"), "yes", kind="flag"),
        Option(("-l", "--load-sysinfo"), "load_sysinfo", kind="flag"),
        Option(("-n", "--no_service_restart"), "no_service_restart", kind="flag"),
        Option(("-f", "--force"), "force", kind="flag"),
        Option(("-t", "--file_format"), "file_format", kind="choice",
               choices=("config_db", "config_yang")),
    ),
    (Argument("filename", "[FILENAME]", required=False),),
    help_text="Clear current configuration and import a previous saved config DB dump file.",
)

_RELOAD_STEPS = (
    "Disabling container monitoring ...",
    "Stopping SONiC target ...",
    "Running command: /usr/local/bin/sonic-cfggen  -j /etc/sonic/init_cfg.json  -j {path}  "
    "--write-to-db",
    "Running command: /usr/local/bin/db_migrator.py -o migrate",
    "Running command: /usr/local/bin/sonic-cfggen -d -y /etc/sonic/sonic_version.yml -t "
    "/usr/share/sonic/templates/sonic-environment.j2,/etc/sonic/sonic-environment",
    "Restarting SONiC target ...",
    "Enabling container monitoring ...",
    "Reloading Monit configuration ...",
    "Reinitializing monit daemon",
)


def _reload(ctx: Context, values: dict) -> CommandResult:
    path = values["filename"] or DEFAULT_CONFIG_FILE
    file_format = values["file_format"] or "config_db"

    def proceed() -> CommandResult:
        if path not in ctx.switch.saved_configs:
            return ok(f"The config file {path} doesn't exist\n")
        ctx.switch.reload_config(path)
        return ok(lines(step.format(path=path) for step in _RELOAD_STEPS))

    if values["yes"]:
        return proceed()
    if values["filename"] is None:
        question = (f"Clear current config and reload config in {file_format} format from the "
                    "default config file(s) ?")
    else:
        question = (f"Clear current config and reload config in {file_format} from the file(s) "
                    f"{path} ?")
    return confirm(question, proceed)


# -- ecn -----------------------------------------------------------------------------------

_THRESHOLDS = ("rmax", "rmin", "ymax", "ymin", "gmax", "gmin")
_PROBABILITIES = ("rdrop", "ydrop", "gdrop")
ECN = ClickCommand(
    "config ecn",
    (
        Option(("-profile",), "profile", required=True),
        *(Option((f"-{name}",), name, kind="int") for name in _THRESHOLDS),
        *(Option((f"-{name}",), name, kind="int", bounds=(0, 100)) for name in _PROBABILITIES),
        Option(("-v", "--verbose"), "verbose", kind="flag"),
    ),
    help_text="ECN-related configuration tasks",
)


def _ecn(ctx: Context, values: dict) -> CommandResult:
    profile = values["profile"]
    given = {name: str(values[name]) for name in (*_THRESHOLDS, *_PROBABILITIES)
             if values[name] is not None}
    result = set_wred_profile(ctx.switch.db, profile, given, values["verbose"])
    if values["verbose"]:
        # run_command(display_cmd=True) echoes the ecnconfig call it makes.
        argv = ["ecnconfig", "-p", profile]
        for name in (*_THRESHOLDS, *_PROBABILITIES):
            if name in given:
                argv += [f"-{name}", given[name]]
        shown = f"Running command: {' '.join([*argv, '-vv'])}\n"
        result = CommandResult(stdout=shown).then(result)
    if result.exit_status == 0:
        ctx.switch.reconcile()
    return result


# -- mmu -----------------------------------------------------------------------------------

# sonic-utilities 202311 config/main.py, `mmu`: `@click.option('-p', ..., required=True)`, so
# without -p click stops with a usage error (exit 2) before mmuconfig runs.
MMU = ClickCommand(
    "config mmu",
    (
        # required=True since sonic-utilities 202311 (config/main.py, mmu(); #2775).
        Option(("-p",), "profile", required=True),
        Option(("-a",), "alpha", kind="int", bounds=(-8, 8)),
        Option(("-s",), "staticth", kind="int"),
    ),
    help_text="mmuConfig configuration tasks",
)


def _mmu(ctx: Context, values: dict) -> CommandResult:
    """Runs `mmuconfig -p P [-a N] [-s N]`: -a wins over -s, neither changes nothing."""
    profile = values["profile"]
    if values["alpha"] is not None:
        field, value = "dynamic_th", values["alpha"]
    elif values["staticth"] is not None:
        field, value = "static_th", values["staticth"]
    else:
        return ok()
    return set_buffer_threshold(ctx.switch.db, profile, field, value)


# -- interface -----------------------------------------------------------------------------

def _admin_command(status: str) -> ClickCommand:
    verb = "startup" if status == "up" else "shutdown"
    return ClickCommand(
        f"config interface {verb}",
        arguments=(Argument("interface_name", "<interface_name>"),),
        help_text="Start up interface" if status == "up" else "Shut down interface",
    )


def _set_admin_status(status: str) -> Handler:
    command = _admin_command(status)

    def body(ctx: Context, values: dict) -> CommandResult:
        name = values["interface_name"]
        db = ctx.switch.db
        ports = sorted((key.split("|", 1)[1] for key in db.keys(CONFIG_DB, "PORT|*")),
                       key=natural_key)
        wanted = parse_interface_filter(name)
        # Only a single name is validated: names in lists and ranges that are not ports are
        # skipped silently, which is how `Ethernet0-16` steps over the ports that exist.
        if len(wanted) == 1 and name not in ports:
            raise command.error("Interface name is invalid. Please enter a valid interface name!!")
        for port in ports:
            if port in wanted:
                db.hset(CONFIG_DB, f"PORT|{port}", {"admin_status": status})
        ctx.switch.reconcile()
        return ok()

    return click_command(command, body)


PFC_PRIORITY = ClickCommand(
    "config interface pfc priority",
    arguments=(
        Argument("interface_name", "<interface_name>"),
        Argument("priority", "[0|1|2|3|4|5|6|7]", choices=tuple(str(p) for p in range(8))),
        Argument("status", "[on|off]", choices=("on", "off")),
    ),
    help_text="Set PFC priority configuration.",
)


def _pfc_priority(ctx: Context, values: dict) -> CommandResult:
    result = set_pfc_priority(ctx.switch.db, values["interface_name"], values["priority"],
                              values["status"])
    ctx.switch.reconcile()
    return result


config = ClickGroup("config", {
    "save": click_command(SAVE, _save),
    "reload": click_command(RELOAD, _reload),
    "ecn": click_command(ECN, _ecn),
    "mmu": click_command(MMU, _mmu),
    "buffer": buffer,
    "interface": ClickGroup("config interface", {
        "buffer": interface_buffer,
        "startup": _set_admin_status("up"),
        "shutdown": _set_admin_status("down"),
        "pfc": ClickGroup("config interface pfc", {
            "priority": click_command(PFC_PRIORITY, _pfc_priority),
        }, help_text="Set PFC configuration."),
    }, help_text="Interface-related configuration tasks"),
}, help_text="SONiC command line - 'config' command", callback=_require_root)
