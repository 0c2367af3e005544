"""Which graph op a name given to `ni` means: every spelling the tool prints can be given back.

Accepted, besides the graph op name: the dump-file spelling (`bn2_FusedBatchNormV3`, as in dump and
golden file names and the NPU-vs-NPU and overflow panels), the TF name of an op fused away (found in
`_datadump_original_op_names` of the op it was fused into), `NAME:output:N` / `NAME:input:N` / `NAME:N`
(the op, with that tensor marked), a dump file name or path, and a golden .npy name or path.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from precision_tool.analysis.graph_index import GraphIndex
from precision_tool.analysis.tensor_ref import split_dump_tensor
from precision_tool.errors import FormatError

_OUTPUT_SLOT = re.compile(r"^(?P<name>.+):(?P<index>\d+)$")  # a TF tensor name 'conv1/Conv2D:0'


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

    @property
    def ambiguous(self) -> bool:
        return len(self.names) > 1


def resolve(index: GraphIndex, text: str) -> Lookup:
    """The op(s) `text` names in the loaded graphs (see the module docstring for the spellings)."""
    query = text.strip()
    found = _resolve(index, query)
    if found is not None:
        return found
    close, total = close_matches(index, query)
    return Lookup(query, close=tuple(close), close_total=total)


def _resolve(index: GraphIndex, query: str) -> Lookup | None:
    found = _resolve_word(index, query, query)
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
    from precision_tool.formats.golden import golden_key

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
    from precision_tool.formats.golden import parse_golden_name
    from precision_tool.formats.npu_dump import parse_dump_name, read_mapping

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
    from precision_tool.formats.golden import parse_golden_name
    from precision_tool.formats.npu_dump import parse_dump_name

    dump = parse_dump_name(file_name)
    if dump is not None:
        inner = _resolve_word_plain(index, dump.op_name, query)
        if inner is not None:
            return inner if inner.ambiguous else Lookup(
                query, inner.names, f"{file_name} is a dump file of {inner.names[0]}")
    golden = parse_golden_name(file_name)
    if golden is not None:
        safe, slot, _ = golden
        inner = _resolve_word_plain(index, safe, query)
        if inner is not None:
            key = f"{safe}.{slot}"
            note = f"{file_name} is the golden tensor {key} of {', '.join(inner.names)}"
            return Lookup(query, inner.names, note if not inner.ambiguous else inner.note, key)
    return None


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
    from precision_tool.formats.npu_dump import sanitize_op_name

    names = index.names()
    lowered = {text.lower(), sanitize_op_name(text).lower()}
    containing = [n for n in names if any(w in n.lower() or w in sanitize_op_name(n).lower() for w in lowered)]
    if containing:
        prefix = [n for n in containing if n.startswith(text)]
        rest = [n for n in containing if not n.startswith(text)]
        return (prefix + rest)[:limit], len(containing)
    similar = difflib.get_close_matches(text, names, n=limit, cutoff=0.6)
    return similar, len(similar)
