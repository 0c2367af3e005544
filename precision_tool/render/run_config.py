"""The run-config diff as one short table: setting, the two values, why it matters.

Plain Text cells throughout: recorded values (paths, environment values) are never read as markup.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text


def difference_table(pair: Any, title: str) -> Table:
    """`pair`: analysis.checks.run_config_diff.RecordPair with at least one difference."""
    table = Table(title=Text(title), title_justify="left")
    table.add_column("setting", overflow="fold")
    table.add_column(pair.left_name, overflow="fold")  # a value is shown whole, folded if need be
    table.add_column(pair.right_name, overflow="fold")
    table.add_column("why it matters", style="dim", ratio=1)
    for row in pair.differences:
        table.add_row(Text(f"{row.group}: {row.setting}"), Text(row.left), Text(row.right), Text(row.why))
    return table


def sources_line(pair: Any) -> Text:
    """Which records were compared (and whether one is simulated), under the table."""
    def one(name: str, record: Any) -> str:
        return f"{name} {record.path}" + (" (simulated NPU run)" if record.simulated else "")

    return Text(f"records: {one(pair.left_name, pair.left)}; {one(pair.right_name, pair.right)}", style="dim")


def no_differences_line(pair: Any) -> Text:
    return Text(f"run config: no differences that matter between {pair.left_name} and {pair.right_name}",
                style="dim")
