"""The nodes' BMCs (DESIGN.md section 12): Redfish drivers, credentials, power Actions.

- `drivers/base.py`: the small interface (`BmcDriver`) and the dataclasses it returns;
  `get_bmc_driver()` picks the implementation named in `settings.BMC_DRIVER`.
- `drivers/redfish.py`: Redfish through OpenStack's sushy (a real BMC, or sushy-emulator in tests).
- `drivers/simulated.py`: the demo's simulated BMCs, with the same behaviour.
- `credentials.py`: `Node.bmc_credentials_ref` -> a login, read from `BMC_CREDENTIALS_FILE`.
- `power.py`: power requests as durable Actions and the policy behind them;
  `action_handlers.py` carries them out.
- `guards.py`: the seam through which a higher app (jobs) says what a power-off would hit.
"""
