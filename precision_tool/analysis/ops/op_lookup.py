"""Which graph op a name given to `ni` means: every spelling the tool prints can be given back.

Accepted, besides the graph op name: the dump-file spelling (`bn2_FusedBatchNormV3`, as in dump and
golden file names and the NPU-vs-NPU and overflow panels), the TF name of an op fused away (found in
`_datadump_original_op_names` of the op it was fused into), `NAME:output:N` / `NAME:input:N` / `NAME:N`
(the op, with that tensor marked), a dump file name or path, a golden .npy name or path, a golden key
`KEY.N` (as `ni` prints them: `golden bn2_FusedBatchNormV3.0`; the op, with that golden tensor marked), and
an op id `16` or `[16]` (as `ls`, `ni` and the vcs/ac panels print them: the op with that Id).
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from precision_tool.analysis.graphs.graph_index import GraphIndex
from precision_tool.analysis.ops.tensor_ref import split_dump_tensor
from precision_tool.errors import FormatError

_OUTPUT_SLOT = re.compile(r"^(?P<name>.+):(?P<index>\d+)$")  # a TF tensor name 'conv1/Conv2D:0'
_GOLDEN_KEY = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)\.(?P<slot>\d+)$")  # 'bn2_FusedBatchNormV3.0'
_OP_ID = re.compile(r"^(?:\[(?P<bracketed>\d+)\]|(?P<bare>\d+))$")  # '16', '[16]'


@dataclass(frozen=True)
class Lookup:
    """What a name resolved to: graph op names (several when the spelling is ambiguous), how it was read
    (a one-line note, or None for an exact name), the tensor it named, and close matches when nothing did."""

    query: str
    names: tuple[str, ...] = ()
    note: str | None = None
    tensor: str | None = None  # 'output 0', 'input 1', or a golden key 'conv1_Relu.0'
    close: tuple[str, ...] = ()
    close_total: int = 0
    fused_from: str | None = None  # the name given, when it is an op fused away into `names`
    places: tuple[str, ...] = ()  # for an ambiguous id: where each of `names` has it ('debug_0 · graph G')
    problem: str | None = None  # why nothing was found, when close matches would not help (an unknown id)

    @property
    def ambiguous(self) -> bool:
        return len(self.names) > 1


def resolve(index: GraphIndex, text: str, graph_filter: str | None = None) -> Lookup:
    """The op(s) `text` names in the loaded graphs (see the module docstring for the spellings); an op
    id is looked up in the graphs `graph_filter` selects (as `ni -g` does), by default the Build graphs."""
    query = text.strip()
    if query.endswith(":") and not query.endswith("::"):
        query = query[:-1]  # copied with the colon of a `golden KEY:` / `debug_0:` label
    found = _resolve(index, query, graph_filter)
    if found is not None:
        return found
    close, total = close_matches(index, query)
    return Lookup(query, close=tuple(close), close_total=total)


def _resolve(index: GraphIndex, query: str, graph_filter: str | None) -> Lookup | None:
    found = _resolve_word(index, query, query)
    if found is not None:
        return found
    number = _OP_ID.match(query)
    if number:
        return _from_id(index, query, int(number.group("bracketed") or number.group("bare")), graph_filter)
    key = _GOLDEN_KEY.match(query)
    if key:
        found = _golden(index, key.group("name"), int(key.group("slot")), query)
        if found is not None:
            return found
    ref = split_dump_tensor(query)  # NAME:output:N, DUMPFILE:input:N (as pt/cp/dc take them)
    if ref is not None:
        head, kind, number = ref
        inner = _resolve_word(index, head, query)
        if inner is not None:
            return _with_tensor(inner, kind, number)
    match = _OUTPUT_SLOT.match(query)  # a TF tensor name, as `ni` lists inputs: conv2/Conv2D:0
    if match:
        inner = _resolve_word(index, match.group("name"), query)
        if inner is not None:
            return _with_tensor(inner, "output", int(match.group("index")))
    return None


def _with_tensor(found: Lookup, kind: str, number: int) -> Lookup:
    """The op found, with tensor `kind` `number` of the name given marked. For an op fused away that is its
    golden tensor (`conv1/BiasAdd:0` → conv1_BiasAdd.0), not the fused op's tensor of that number."""
    from precision_tool.formats.tf.golden import golden_key

    if found.tensor is not None:
        return found
    if found.fused_from is None:
        return replace(found, tensor=f"{kind} {number}")
    if kind == "output":
        return replace(found, tensor=golden_key(found.fused_from, number))
    return replace(found, note=f"{found.note}; the inputs of an op fused away have no row of their own, so "
                               "none is marked")


def _resolve_word(index: GraphIndex, word: str, query: str) -> Lookup | None:
    """One spelling without a tensor suffix: an op name, a file (path or bare name), an alias."""
    if word in index.names_set():
        return Lookup(query, (word,))
    file_name = _file_name(word)
    if file_name is not None:
        found = _from_file_name(index, file_name, query)
        if found is not None:
            return found
    return _from_alias(index, word, query)


def _file_name(word: str) -> str | None:
    """The dump or golden file name `word` is: its base name when it is an existing file (a numbered
    dump name is read through its folder's mapping.csv), or `word` itself when it parses as one."""
    from precision_tool.formats.tf.golden import parse_golden_name
    from precision_tool.formats.npu.npu_dump import parse_dump_name, read_mapping

    path = Path(word)
    if os.sep in word or "/" in word:
        try:
            is_file = path.is_file()
        except OSError:
            is_file = False
        if is_file:
            base = path.name
            if parse_dump_name(base) is None and parse_golden_name(base) is None:
                try:
                    base = read_mapping(path.parent).get(base, base)
                except (FormatError, OSError):
                    pass  # no usable mapping.csv: the name stays as it is
            return base
    if parse_dump_name(word) is not None or parse_golden_name(word) is not None:
        return word
    return None


def _from_file_name(index: GraphIndex, file_name: str, query: str) -> Lookup | None:
    from precision_tool.formats.tf.golden import parse_golden_name
    from precision_tool.formats.npu.npu_dump import parse_dump_name

    dump = parse_dump_name(file_name)
    if dump is not None:
        inner = _resolve_word_plain(index, dump.op_name, query)
        if inner is not None:
            return inner if inner.ambiguous else Lookup(
                query, inner.names, f"{file_name} is a dump file of {inner.names[0]}")
    golden = parse_golden_name(file_name)
    if golden is not None:
        return _golden(index, golden[0], golden[1], query, file_name)
    return None


def _golden(index: GraphIndex, safe: str, slot: int, query: str, file_name: str | None = None) -> Lookup | None:
    """The op(s) of golden tensor `safe`.`slot` (given as a golden file name, or as the key itself),
    with that golden tensor marked; the note says when the workspace has no such golden file."""
    from precision_tool.formats.tf.golden import scan_golden_dir

    inner = _resolve_word_plain(index, safe, query)
    if inner is None:
        return None
    key = f"{safe}.{slot}"
    if inner.ambiguous:
        return Lookup(query, inner.names, inner.note, key)
    op = inner.names[0] + (f" ({safe} was fused into it)" if inner.fused_from else "")
    if file_name is not None:
        note = f"{file_name} is the golden tensor {key} of {op}"
    elif key in scan_golden_dir(index.workspace.golden_dir, (f"{key}.",)):
        note = f"{key} is a golden tensor of {op}"
    else:
        note = f"{key} names a golden tensor of {op}, but there is no {key}.*.npy in {index.workspace.golden_dir}"
    return Lookup(query, inner.names, note, key)


def _from_id(index: GraphIndex, query: str, number: int, graph_filter: str | None) -> Lookup:
    """The op with Id `number` in each run's graph; several (with where each is) when the runs' graphs
    disagree or several graphs hold the id."""
    entries = index.entries(graph_filter)
    found = [e for e in entries if e.id == number]
    if not found:
        ids = [e.id for e in entries]
        span = f" (the ids run from {min(ids)} to {max(ids)})" if ids else ""
        return Lookup(query, problem=f"no op is named {query!r} and no op has Id {number}{span}")
    where: dict[str, dict[str, list[str]]] = {}  # name → graph → runs
    for e in found:
        where.setdefault(e.name, {}).setdefault(e.graph, []).append(f"debug_{e.debug_id}")
    names = tuple(where)
    if len(names) == 1:
        runs = ", ".join(sorted({f"debug_{e.debug_id}" for e in found}))
        return Lookup(query, names, f"{query} is the Id of {names[0]} in {runs}")
    places = ("; ".join(f"{', '.join(runs)} · graph {graph}" for graph, runs in graphs.items())
              for graphs in where.values())
    return Lookup(query, names, f"Id {number} is {len(names)} different ops", places=tuple(places))


def _resolve_word_plain(index: GraphIndex, word: str, query: str) -> Lookup | None:
    if word in index.names_set():
        return Lookup(query, (word,))
    return _from_alias(index, word, query)


def _from_alias(index: GraphIndex, word: str, query: str) -> Lookup | None:
    spelled, fused = index.aliases()
    names = spelled.get(word)
    if names:
        ordered = tuple(sorted(names))
        if len(ordered) == 1:
            return Lookup(query, ordered, f"{word} is the dump-file spelling of {ordered[0]}")
        return Lookup(query, ordered, f"{word} is the dump-file spelling of {len(ordered)} ops")
    names = fused.get(word)
    if names:
        ordered = tuple(sorted(names))
        if len(ordered) == 1:
            return Lookup(query, ordered, f"{word} was fused into {ordered[0]} (it is in that op's "
                                          f"_datadump_original_op_names)", fused_from=word)
        return Lookup(query, ordered, f"{word} was fused into {len(ordered)} ops", fused_from=word)
    return None


def close_matches(index: GraphIndex, text: str, limit: int = 8) -> tuple[list[str], int]:
    """Names that look like `text`: those containing it (or its dump-file spelling), prefix matches
    first, else the most similar names; and how many contained it in all."""
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    names = index.names()
    lowered = {text.lower(), sanitize_op_name(text).lower()}
    containing = [n for n in names if any(w in n.lower() or w in sanitize_op_name(n).lower() for w in lowered)]
    if containing:
        prefix = [n for n in containing if n.startswith(text)]
        rest = [n for n in containing if not n.startswith(text)]
        return (prefix + rest)[:limit], len(containing)
    similar = difflib.get_close_matches(text, names, n=limit, cutoff=0.6)
    return similar, len(similar)
