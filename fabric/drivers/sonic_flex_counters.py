"""Whether a SONiC switch collects ECN-marked queue counters, from its flex-counter settings.

Until 202505 no flex-counter group polls SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS (sonic-swss
orchagent/portsorch.cpp 202411: queue_stat_ids has packets, bytes and drops only). From 202505
the `WRED_ECN_QUEUE` group does (portsorch.cpp wred_queue_stat_ids, flexcounterorch.cpp
flexCounterGroupMap `{"WRED_ECN_QUEUE", WRED_QUEUE_STAT_COUNTER_FLEX_COUNTER_GROUP}`), but only
once `CONFIG_DB FLEX_COUNTER_TABLE|WRED_ECN_QUEUE` has `FLEX_COUNTER_STATUS enable`, which
init_cfg.json.j2 (sonic-buildimage files/build_templates) does not set. `counterpoll wredqueue
enable` sets it (sonic-utilities counterpoll/main.py, wredqueue_enable). orchagent records
whether the ASIC can count ECN marks at all in STATE_DB
`QUEUE_COUNTER_CAPABILITIES|WRED_ECN_QUEUE_ECN_MARKED_PKT_COUNTER` (portsorch.cpp,
initCounterCapabilities; absent on images without the group).
"""

from __future__ import annotations

from collections.abc import Mapping

ECN_MARKED_FIELD = "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"
WRED_ECN_QUEUE_GROUP = "WRED_ECN_QUEUE"
FLEX_COUNTER_KEY = f"FLEX_COUNTER_TABLE|{WRED_ECN_QUEUE_GROUP}"
CAPABILITY_KEY = "QUEUE_COUNTER_CAPABILITIES|WRED_ECN_QUEUE_ECN_MARKED_PKT_COUNTER"
ENABLE_COMMAND = "sudo counterpoll wredqueue enable"

# What a poll learns about ECN-marked counters.
COLLECTED = "collected"
DISABLED = "disabled"  # the image has the group, switched off: `counterpoll wredqueue enable`
UNSUPPORTED = "unsupported"  # the image or the ASIC cannot count them
STATES = (COLLECTED, DISABLED, UNSUPPORTED)


def ecn_counter_state(flex_group: Mapping[str, str], capability: Mapping[str, str],
                      counted: bool) -> str:
    """`flex_group` is CONFIG_DB FLEX_COUNTER_TABLE|WRED_ECN_QUEUE, `capability` STATE_DB's
    capability entry, `counted` whether any queue hash holds the ECN-marked field."""
    if counted:
        # Whatever the configuration says, the switch publishes them (a vendor image may
        # count them in the QUEUE group).
        return COLLECTED
    if capability.get("isSupported") == "false" or not capability:
        return UNSUPPORTED
    if flex_group.get("FLEX_COUNTER_STATUS") == "enable":
        # Enabled, but the first poll of the group has not run yet.
        return COLLECTED
    return DISABLED
