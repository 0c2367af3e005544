"""A search's folder temp/bisect/<time>/: settings.json (what is searched, how each round runs and is
judged, the ranked candidates), rounds.csv (a row per finished round), round_NNN/ (the round's list or
switch file, its comparison CSV, verdict.json) and result.json once it ends. A rerun with the same
settings finds the newest unfinished folder and answers the rounds it already ran from rounds.csv
(`SearchStore.known`), so Ctrl-C or a crashed round costs only the round that did not finish.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_tool.atomic import write_text_atomic
from precision_tool.errors import FormatError

SETTINGS = "settings.json"
ROUNDS = "rounds.csv"
RESULT = "result.json"
COLUMNS = ("Round", "Set", "Outcome", "Verdict", "Seconds", "Run", "ExitStatus")
SAME_SEARCH_KEYS = ("kind", "command", "check", "base")  # settings that must match to resume


@dataclass(frozen=True)
class RoundRow:
    number: int
    members: tuple[str, ...]
    outcome: str  # pass | fail | error (the command failed the way the first bad round did)
    verdict: str
    seconds: float
    run: str = ""
    exit_status: int | None = None


@dataclass
class SearchStore:
    folder: Path
    settings: dict[str, Any]
    rows: list[RoundRow] = field(default_factory=list)
    resumed: bool = False

    @property
    def known(self) -> dict[frozenset[str], RoundRow]:
        return {frozenset(row.members): row for row in self.rows}

    def round_dir(self, number: int) -> Path:
        folder = self.folder / f"round_{number:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def next_number(self) -> int:
        return max((row.number for row in self.rows), default=-1) + 1

    def save_settings(self) -> None:
        write_text_atomic(self.folder / SETTINGS, json.dumps(self.settings, indent=2) + "\n")

    def add(self, row: RoundRow, verdict: dict[str, Any]) -> None:
        """The round's verdict.json, then its row: a round counts as finished only once both are written."""
        write_text_atomic(self.round_dir(row.number) / "verdict.json", json.dumps(verdict, indent=2) + "\n")
        self.rows.append(row)
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        for r in self.rows:
            writer.writerow([r.number, ";".join(r.members), r.outcome, r.verdict, f"{r.seconds:.1f}", r.run,
                             "" if r.exit_status is None else r.exit_status])
        write_text_atomic(self.folder / ROUNDS, out.getvalue())

    def finish(self, result: dict[str, Any]) -> None:
        write_text_atomic(self.folder / RESULT, json.dumps(result, indent=2) + "\n")


def _read_rows(path: Path) -> list[RoundRow]:
    if not path.is_file():
        return []
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for line, record in enumerate(csv.DictReader(handle), start=2):
            try:
                status = record["ExitStatus"]
                rows.append(RoundRow(int(record["Round"]), tuple(m for m in record["Set"].split(";") if m),
                                     record["Outcome"], record["Verdict"], float(record["Seconds"]),
                                     record["Run"], int(status) if status else None))
            except (KeyError, ValueError, TypeError):
                raise FormatError(path, f"line {line} is not a bisect round row ({', '.join(COLUMNS)}); delete the "
                                        "folder or start afresh with --new") from None
    return rows


def open_search(bisect_root: Path, settings: dict[str, Any], *, new: bool = False) -> SearchStore:
    """The newest unfinished search with the same settings (resumed), else a new folder. A temp/ that cannot
    be written is one WorkspaceError line naming it."""
    from precision_tool.workspace import Workspace

    Workspace.ensure_dir(bisect_root, "bisect rounds folder")
    if not new and bisect_root.is_dir():
        for folder in sorted((p for p in bisect_root.iterdir() if p.is_dir()), reverse=True):
            if (folder / RESULT).exists() or not (folder / SETTINGS).is_file():
                continue
            try:
                saved = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(saved, dict) and all(saved.get(k) == settings.get(k) for k in SAME_SEARCH_KEYS):
                return SearchStore(folder, saved, _read_rows(folder / ROUNDS), resumed=True)
    from precision_tool.workspace import new_result_dir

    folder = new_result_dir(bisect_root, what="bisect folder")
    store = SearchStore(folder, dict(settings))
    store.save_settings()
    return store
