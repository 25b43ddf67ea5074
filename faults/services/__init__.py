"""Writes for the faults app, one module per concern; views, tasks and hooks call these.

- `intake`: every channel's delivery kept raw, parsed (faults.parsing), then opened or attached.
- `deduplication`: which open ticket an incident belongs to, or a new one (one per fingerprint).
- `policy`: a rule's automatic steps and proposals on a ticket (faults.policies holds the rules).
- `tickets`: what people do to a ticket: move it along the workflow, take it, note, reopen.
- `state_changes`: fabric and Slurm state changes open tickets, and record when they clear.
- `recovery`: a ticket's recovery steps in one click, each an Action with the ticket as reason.
- `fault_history`: the paper's 21 faults of January-March 2025 seeded for the demo and tests.
- `timeline`: the timeline entries and live events every write above leaves behind.
"""
