"""How a node's Slurm state is shown everywhere (the cluster grid, node pages, live updates).

Only the scheduler's words are read here, no model: the inventory's pages and the console's grid
both use it, so a node page and the grid always agree; static/js/cluster.js mirrors GRID_STATES.
"""

from __future__ import annotations

# The grid's states, in legend order, with the letter each cell shows (colour is never alone).
GRID_STATES = {
    "idle": "I",
    "allocated": "A",
    "mixed": "M",
    "draining": "d",
    "drained": "D",
    "down": "X",
    "unknown": "?",
}
# Slurm's words (SlurmNodeState.display_state) that the grid shows as one of its states.
# A node Slurm is rebooting (REBOOT_ISSUED, sinfo's "reboot^") is out of service on purpose,
# as a drained one is.
_STATE_ALIASES = {
    "not_responding": "down",
    "completing": "allocated",
    "rebooting": "drained",
    "reboot": "drained",
    "": "unknown",
}


def grid_state(slurm_state: str) -> str:
    """The grid state for a node's Slurm state: the sync's words (idle, draining,
    not_responding, ...) or Slurm's own (IDLE+DRAIN, MIXED+DRAIN, DOWN*, ALLOC). Every page
    that shows a node's state uses this, so the grid and the node page always agree."""
    state = (slurm_state or "").lower().rstrip("*~#$@^-")
    state = _STATE_ALIASES.get(state, state)
    if state in GRID_STATES:
        return state
    flags = set(state.split("+"))
    base = state.split("+", 1)[0]
    if base == "down" or flags & {"down", "fail", "not_responding"}:
        return "down"
    if "drain" in flags or base in ("drain", "drained"):
        return "drained" if base in ("idle", "drain", "drained", "down") else "draining"
    if base in ("alloc", "allocated", "completing"):
        return "allocated"
    return "unknown"
