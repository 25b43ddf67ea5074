"""NetBox interop through pynetbox.

    manage.py netbox_import --url URL --token TOKEN [--dry-run] [--site SLUG] [--role SLUG=KIND]
    manage.py netbox_export --url URL --token TOKEN [--dry-run] [--site SLUG] [--role SLUG=KIND]

- `mapping.py`: pure translations between NetBox 4.x JSON and our fields, with the naming
  conventions (device role slugs, Table 2 NIC names, SONiC port names) and their custom-field
  overrides;
- `client.py`: reads and writes through pynetbox, every remote failure as `NetboxError`;
- `importer.py`: plan, then one audited transaction (idempotent, atomic, dry run shows the diff);
- `exporter.py`: plan from reads, then create or PATCH only what is missing or differs.
"""
