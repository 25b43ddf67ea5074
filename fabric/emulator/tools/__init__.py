"""The emulated command-line tools, one module per family (show, config, sonic-db-cli, vtysh)."""
