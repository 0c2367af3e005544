"""One exception family. The shell catches only these and shows their message as one line."""

from __future__ import annotations

import os


class PrecisionToolError(Exception):
    """A failure the user can act on; the message is the whole story (what, which file, what to do)."""


class UsageError(PrecisionToolError):
    """Wrong command line: unknown option, wrong number of arguments."""


class ConfigError(PrecisionToolError):
    """The configuration file cannot be read or holds unknown keys / wrong types."""


class WorkspaceError(PrecisionToolError):
    """The precision_data workspace lacks what a command needs."""


class FormatError(PrecisionToolError):
    """A file is not what its format promises. Always names the file."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class CommandFailed(PrecisionToolError):
    """A command ran but some of its work failed (e.g. some files in a folder were bad).

    The command has already shown what succeeded; this makes the exit status say that something failed.
    """
