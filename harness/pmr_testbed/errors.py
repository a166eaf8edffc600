"""Errors the user can fix: printed as one line, exit status 2."""


class UserError(Exception):
    """Bad input or a missing prerequisite: what is wrong and how to fix it."""

    exit_code = 2


class GuestError(Exception):
    """The guest crashed, hung or failed: never reported as a result."""

    exit_code = 3

    def __init__(self, message: str, console_tail: str = ""):
        super().__init__(message)
        self.console_tail = console_tail
