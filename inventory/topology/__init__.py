"""Topology specs (SPEC.md): read and checked (spec.py, reading.py), expanded into a plan of rows
(expand.py, plan.py), and written to the inventory (importer.py)."""
