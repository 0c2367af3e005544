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


class WorkspaceWriteError(WorkspaceError, OSError):
    """A folder cannot be created or written (Workspace.ensure_dir).

    Also an OSError, so writers that already treat an OSError as "skip the optional write" (caches)
    keep doing so.
    """

    def __str__(self) -> str:  # OSError's __str__ would show the args tuple
        return str(self.args[0]) if self.args else ""


class FormatError(PrecisionToolError):
    """A file is not what its format promises. Always names the file."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class CommandFailed(PrecisionToolError):
    """A command ran but some of its work failed (e.g. some files in a folder were bad).

    The command has already shown what succeeded; this makes the exit status say that something failed.
    `exit_status` sets the one-shot's exit status (a training command's own status, 130 for Ctrl-C);
    None means the usual 1.
    """

    def __init__(self, message: str = "", *, exit_status: int | None = None) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class CommandInterrupted(CommandFailed):
    """Ctrl-C stopped the command; what was kept has been said. A command that runs others (`ac`) stops too."""
