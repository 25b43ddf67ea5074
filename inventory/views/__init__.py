"""Pages of the inventory app: lists with filters, node and switch detail, the fabric picture and
the validation report. Views stay thin: reads come from `inventory.selectors`."""
