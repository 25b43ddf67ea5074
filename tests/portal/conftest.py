import tests.portal.action_handlers  # noqa: F401 - registers the test handlers in this process
