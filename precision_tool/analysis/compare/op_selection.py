"""A range or selection of graph ops to compare (msaccucmp's -r START,END,STEP and -s ID,ID,...).

Ops are picked by their graph id (the JSON `id`, msaccucmp's OpSequence); a fusion group is compared when
any of its ops is picked. Ids run 1..the graph's last id; out-of-range input is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass

from precision_tool.analysis.compare.matching import MatchPlan


@dataclass(frozen=True)
class OpSelection:
    """Graph ops picked by id: `-r START,END,STEP` (END -1: the last id) or `-s ID,ID,...`."""

    text: str
    is_range: bool

    def ids(self, op_count: int) -> tuple[set[int] | None, tuple[int, int, int] | None, list[str]]:
        """(the selected ids, or the (start, end, step) of a range; warnings). Raises ValueError with the
        reason when the text does not fit the graph (ids run 1..op_count, the graph's last op id)."""
        if self.is_range:
            return None, self._range(op_count), []
        picked = []
        for item in self.text.split(","):
            value = item.strip()
            if not value:
                continue
            if not value.isdigit() or not value.isascii():
                raise ValueError(f"-s {self.text}: {value!r} is not an op id; give ids as ID,ID,... (numbers)")
            picked.append(int(value))
        if not picked:
            raise ValueError(f"-s {self.text}: no op id given; give ids as ID,ID,...")
        kept = sorted({v for v in picked if v <= op_count})
        outside = sorted({v for v in picked if v > op_count})
        if not kept:
            raise ValueError(f"-s {self.text}: ids {outside} are past the graph's last op id {op_count}")
        warnings = [f"-s: ids {outside} are past the graph's last op id {op_count}; left out"] if outside else []
        return set(kept), None, warnings

    def _range(self, op_count: int) -> tuple[int, int, int]:
        parts = self.text.split(",")
        if len(parts) != 3:
            raise ValueError(f"-r {self.text}: give START,END,STEP (END -1: the last op; an empty field keeps "
                             "its default 1,-1,1)")
        values = [1, op_count, 1]
        for position, item in enumerate(parts):
            value = item.strip()
            if not value or (position == 1 and value == "-1"):
                continue
            if not value.isdigit() or not value.isascii():
                raise ValueError(f"-r {self.text}: {value!r} is not a number (START,END,STEP)")
            values[position] = int(value)
        start, end, step = values
        if not 1 <= start <= op_count:
            raise ValueError(f"-r {self.text}: START {start} is outside [1, {op_count}] (the graph's op ids)")
        if not start <= end <= op_count:
            raise ValueError(f"-r {self.text}: END {end} is outside [{start}, {op_count}]")
        if not 1 <= step < max(op_count, 2):
            raise ValueError(f"-r {self.text}: STEP {step} is outside [1, {op_count})")
        return start, end, step


def select_groups(plan: MatchPlan, selection: OpSelection) -> MatchPlan:
    """The groups holding an op the selection picks, as msaccucmp -r/-s does: a range takes the ids START,
    START+STEP, ... and END; ids are those of the graph (op `id`), the last one bounds them."""
    op_count = max((i for g in plan.groups for i in g.sequences), default=0)
    chosen, span, warnings = selection.ids(op_count)
    if span is not None:
        start, end, step = span

        def picked(i: int) -> bool:
            return start <= i <= end and (i in (start, end) or (i - start) % step == 0)
    else:
        assert chosen is not None

        def picked(i: int) -> bool:
            return i in chosen
    groups = tuple(g for g in plan.groups if any(picked(i) for i in g.sequences))
    return MatchPlan(groups, plan.npu_vs_npu, plan.warnings + tuple(warnings), plan.matched_dumps,
                     plan.unmatched_dumps)
