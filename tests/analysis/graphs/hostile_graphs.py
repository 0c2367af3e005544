"""Hostile GE graph files: a seeded generator of damaged GE text graphs and atc JSON, and a runner.

Why: the readers must end every file in a result or one line naming the file and what is wrong; never
a traceback, a hang, or exit 0 when nothing could be read (issue 11, item 5). The mutations start from
the real files in tests/fixtures/real (ge_graph, atc_json) and add the classic damage: truncation,
flipped bytes, unbalanced braces and quotes, non-UTF-8 bytes, 5,000-digit numbers, 10,000-deep
nesting, empty files, JSON with wrong types and missing keys, and one 50 MB single-line graph (every op of
it in the graph; benchmarks/bench_hostile_big.py also runs one through `ls` and `ni`).

    python3 -m tests.analysis.graphs.hostile_graphs --all [--count 1000] [--cli 40]

runs the full corpus in-process (each file with a time limit) plus a sample through the real CLI
(`ls`, `ni`, `ac`) and prints the counts of tracebacks, hangs and silent passes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "fixtures" / "real"
TEXT_SEEDS = sorted((REAL / "ge_graph").glob("*.txt"))
JSON_SEEDS = sorted((REAL / "atc_json").glob("*.json"))
KINDS = ("text", "json")
DEEP = 10_000
HUGE_LINE_BYTES = 50_000_000


# --- mutations -----------------------------------------------------------------------------------------
def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(0, max(1, len(data)))]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 20)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _drop_char(chars: bytes) -> Any:
    def mutate(data: bytes, rng: random.Random) -> bytes:
        places = [m.start() for m in re.finditer(re.escape(chars), data[:2_000_000])]
        if not places:
            return data + chars
        for _ in range(rng.randint(1, 3)):
            at = rng.choice(places)
            data = data[:at] + data[at + 1:]
            places = [p - 1 if p > at else p for p in places if p != at]
            if not places:
                break
        return data
    return mutate


def _insert(pieces: tuple[bytes, ...]) -> Any:
    def mutate(data: bytes, rng: random.Random) -> bytes:
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data) + 1)
            data = data[:at] + rng.choice(pieces) + data[at:]
        return data
    return mutate


def _non_utf8(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 10)):
        at = rng.randrange(len(out) + 1)
        out[at:at] = rng.choice([b"\xff", b"\xc3\x28", b"\x80\x80", b"\xed\xa0\x80", b"\x00"])
    return bytes(out)


def _huge_number(data: bytes, rng: random.Random) -> bytes:
    digits = str(rng.randint(1, 9)).encode() + b"7" * 4999
    places = [m.span() for m in re.finditer(rb"(?<=[:\[, ])-?\d+(?=[\s,\]}])", data[:2_000_000])]
    if not places:
        return data + digits
    start, end = rng.choice(places)
    return data[:start] + (b"-" if rng.random() < 0.3 else b"") + digits + data[end:]


def _duplicate(data: bytes, rng: random.Random) -> bytes:
    a = rng.randrange(len(data) + 1)
    b = min(len(data), a + rng.randrange(1, 4000))
    at = rng.randrange(len(data) + 1)
    return data[:at] + data[a:b] + data[at:]


def _blank(data: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"", b" ", b"\n\n", b"\xef\xbb\xbf", b"\x00" * 64, b"graph {\n}\n", b"{}", b"[]",
                       b"null", b"\"graph\"", b"# only a comment\n"])


def _deep_text(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([DEEP, DEEP * 2, 1000])
    opener = rng.choice([b"graph {\n", b"attr {\n", b"op {\n", b"value {\n", b"g {\n", b"x {\n"])
    return opener * depth + b"}\n" * (depth if rng.random() < 0.7 else depth // 2)


def _deep_json(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([DEEP, DEEP * 2, 1000])
    if rng.random() < 0.5:
        return b"[" * depth + b"]" * depth
    nest = b'{"graph": [{"op": [{"attr": [{"key": "a", "value": {"g": '
    return nest * (depth // 4) + b"{}" + b"}}]}]}]}" * (depth // 4)


_WRONG = [None, True, 0, -1, 2 ** 70, 1.5, "", "x", [], [1, "a"], {}, {"s": 1}, {"list": {"s": 5}},
          {"list": {"s": ["a", {"b": 1}]}}, {"i": "7"}, {"i": 1.5}, {"b": "yes"}, {"list": None},
          "9" * 5000]


def _json_wrong_type(data: bytes, rng: random.Random) -> bytes:
    try:
        tree = json.loads(data)
    except (ValueError, RecursionError):
        return _flip(data, rng)
    nodes = list(_walk(tree))
    for _ in range(rng.randint(1, 4)):
        if not nodes:
            break
        parent, key = rng.choice(nodes)
        parent[key] = rng.choice(_WRONG)
    return json.dumps(tree).encode()


def _json_missing_key(data: bytes, rng: random.Random) -> bytes:
    try:
        tree = json.loads(data)
    except (ValueError, RecursionError):
        return _truncate(data, rng)
    nodes = [(p, k) for p, k in _walk(tree) if isinstance(p, dict)]
    for _ in range(rng.randint(1, 6)):
        if not nodes:
            break
        parent, key = nodes.pop(rng.randrange(len(nodes)))
        parent.pop(key, None)
    return json.dumps(tree).encode()


def _walk(tree: Any) -> Iterator[tuple[Any, Any]]:
    stack = [tree]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in list(items):
            yield node, key
            if isinstance(value, (dict, list)):
                stack.append(value)


COMMON = [("truncated", _truncate), ("flipped", _flip), ("no_close_brace", _drop_char(b"}")),
          ("no_open_brace", _drop_char(b"{")), ("no_quote", _drop_char(b'"')),
          ("extra_braces", _insert((b"{", b"}", b"}}}", b"{{"))), ("extra_quotes", _insert((b'"', b"'", b'\\"'))),
          ("non_utf8", _non_utf8), ("huge_number", _huge_number), ("duplicated", _duplicate), ("blank", _blank)]
MUTATIONS = {
    "text": COMMON + [("deep", _deep_text)],
    "json": COMMON + [("deep", _deep_json), ("wrong_type", _json_wrong_type), ("wrong_type", _json_wrong_type),
                      ("missing_key", _json_missing_key), ("missing_key", _json_missing_key)],
}


def _seeds(kind: str) -> list[bytes]:
    if kind == "text":
        return [p.read_bytes() for p in TEXT_SEEDS]
    seeds = [p.read_bytes() for p in JSON_SEEDS]
    from precision_tool.formats.ge.ge_graph import load_graph
    from precision_tool.formats.ge.ge_json import format_model_json

    # more JSON seeds: the real text graphs written as atc JSON (the two smallest keep the corpus quick)
    seeds += [format_model_json(load_graph(p)).encode("utf-8", "surrogateescape") for p in TEXT_SEEDS[2:]]
    return seeds


def generate(kind: str, count: int, seed: int = 11) -> Iterator[tuple[str, bytes]]:
    """`count` damaged files of one kind: (name, bytes); the same seed gives the same files."""
    rng = random.Random(f"{kind}-{seed}")
    seeds = _seeds(kind)
    suffix = ".txt" if kind == "text" else ".json"
    for number in range(count):
        label, mutate = rng.choice(MUTATIONS[kind])
        data = mutate(rng.choice(seeds), rng)
        yield f"ge_proto_{number:05d}_{label}_Build{suffix}", data


_NAMED = re.compile(rb'\b(name|input|dst_name): "(?=[^"])')


def one_line(data: bytes) -> bytes:
    """A text graph on one line: each line's indentation dropped, newlines turned into spaces."""
    return b" ".join(line.strip() for line in data.split(b"\n"))


def huge_line_graph(size: int = HUGE_LINE_BYTES) -> tuple[bytes, int]:
    """One line of at least `size` bytes: the op blocks of a real graph copied into one graph until it is that
    big (each copy's op names, inputs and consumers prefixed `c<N>/`, so names stay unique and edges hold),
    with every newline turned into a space; and how many ops it holds."""
    text = TEXT_SEEDS[0].read_bytes()
    first = text.index(b"\n  op {\n") + 1
    last = text.rindex(b"\n  }\n", 0, text.index(b"\n}\n") + 1) + 5  # the graph's last op block
    ops = one_line(text[first:last])
    out = bytearray(b'graph { name: "huge" ')
    copies = 0
    while len(out) < size:
        out += _NAMED.sub(rb'\1: "c%d/' % copies, ops)
        copies += 1
    return bytes(out) + b" }", copies * ops.count(b"op { name:")


# --- running -------------------------------------------------------------------------------------------
class _Timeout(Exception):
    pass


def check_in_process(path: Path, limit: float = 60.0) -> tuple[str, str]:
    """('result'|'refused'|'traceback'|'hang', detail) for reading one file as `ls` and `ni` do."""
    from precision_tool.analysis.graphs.graph_summary import summarize
    from precision_tool.errors import PrecisionToolError
    from precision_tool.formats.ge.ge_graph import load_graph

    def alarm(*_: Any) -> None:
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        light = load_graph(path, light=True)
        summarize(light, path.read_bytes(), 0, True, light=True)
        full = load_graph(path)
        for graph, op in full.iter_ops():  # what ni shows of each op
            _ = (op.fusion_pass, op.kernel_name, op.original_op_names, op.data_inputs,
                 getattr(op, "consumer_names", None),
                 [(d.origin_format, d.origin_shape, d.origin_name) for d in op.output_descs])
        if not any(graph.ops for graph in full.graphs):
            return "silent", "read as a graph with no op"
        return "result", f"{sum(len(g.ops) for g in full.graphs)} ops"
    except _Timeout:
        return "hang", f"more than {limit:.0f} s"
    except PrecisionToolError as exc:
        line = str(exc)
        if "\n" in line.strip() or path.name not in line:
            return "unnamed", line[:300]
        return "refused", line
    except BaseException:  # noqa: BLE001  (the point: anything else is a traceback)
        return "traceback", traceback.format_exc(limit=-3)[-600:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _light_reads(path: Path) -> bool:
    """Does the light parse `ls` uses read the file (damage only in descriptors, which it skips)?"""
    from precision_tool.errors import PrecisionToolError
    from precision_tool.formats.ge.ge_graph import load_graph

    try:
        return any(graph.ops for graph in load_graph(path, light=True).graphs)
    except (PrecisionToolError, Exception):  # noqa: BLE001
        return False


def workspace_with(root: Path, name: str, data: bytes) -> Path:
    graph = root / "npu" / "debug_0" / "graph"
    graph.mkdir(parents=True, exist_ok=True)
    for old in graph.iterdir():
        old.unlink()
    shutil.rmtree(root / "temp", ignore_errors=True)  # no index cached for the previous file of that name
    (graph / name).write_bytes(data)
    return root


def check_cli(root: Path, name: str, args: list[str], readable: bool, limit: float = 120.0) -> tuple[str, str]:
    """Run one command on a workspace whose only Build graph is the file; classify the outcome."""
    env = dict(os.environ, COLUMNS="200", PRECISION_TOOL_NO_COLOR="1")
    try:
        done = subprocess.run([sys.executable, "-m", "precision_tool", "--data", str(root), *args],
                              capture_output=True, text=True, timeout=limit, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", f"{args[0]} ran more than {limit:.0f} s"
    text = done.stdout + done.stderr
    if "Traceback (most recent call last)" in text:
        return "traceback", text[-600:]
    if done.returncode == 0:
        return ("result", "") if readable else ("silent", f"{args[0]} exit 0 on an unreadable graph")
    if readable:
        return "result", ""  # a readable graph: exit 1 is an answer ("no op is named ...")
    if name not in text:
        return "unnamed", text.strip()[:300]
    return "refused", text.strip().splitlines()[-1][:300]


def run(count: int, cli: int, seed: int = 11, huge: bool = True) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    examples: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="hostile_graphs_") as tmp:
        folder = Path(tmp)
        for kind in KINDS:
            tally = counts.setdefault(kind, {})
            sample = set(random.Random(seed).sample(range(count), min(cli, count)))
            for number, (name, data) in enumerate(generate(kind, count, seed)):
                path = folder / name
                path.write_bytes(data)
                outcome, detail = check_in_process(path)
                listable = outcome == "result" or _light_reads(path)
                tally[outcome] = tally.get(outcome, 0) + 1
                if outcome in ("traceback", "hang", "silent", "unnamed"):
                    examples.setdefault(f"{kind} {outcome}", []).append(f"{name}: {detail}")
                if number in sample:
                    root = workspace_with(folder / "ws", name, data)
                    for args in (["ls"], ["ni", "Conv2D"], ["ac"]):
                        readable = listable  # ls, ni and ac read the light index (and single op blocks)
                        got, detail = check_cli(root, name, args, readable)
                        key = f"cli {args[0]} {got}"
                        tally[key] = tally.get(key, 0) + 1
                        if got in ("traceback", "hang", "silent", "unnamed"):
                            examples.setdefault(f"{kind} cli {got}", []).append(f"{name} {args}: {detail}")
                path.unlink()
        if huge:
            name = "ge_proto_99999_one_line_Build.txt"
            path = folder / name
            path.write_bytes(huge_line_graph()[0])
            start = time.monotonic()
            outcome, detail = check_in_process(path, limit=120)
            took = time.monotonic() - start
            counts["huge line"] = {outcome: 1}
            print(f"50 MB single-line graph in-process: {outcome} in {took:.1f} s ({detail[:120]})")
            root = workspace_with(folder / "ws", name, path.read_bytes())
            start = time.monotonic()
            got, detail = check_cli(root, name, ["ls"], outcome == "result", limit=300)
            print(f"50 MB single-line graph via `ls`: {got} in {time.monotonic() - start:.1f} s {detail[:160]}")
            counts["huge line"][f"cli ls {got}"] = 1
    for key, lines in examples.items():
        print(f"--- {key}: {len(lines)}")
        for line in lines[:5]:
            print("   ", line.replace("\n", " | ")[:400])
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="run the full corpus (default: a quick 50 per kind)")
    parser.add_argument("--count", type=int, default=1000, help="files per kind with --all (default 1000)")
    parser.add_argument("--cli", type=int, default=30, help="files per kind also run through ls/ni/ac")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-huge", action="store_true", help="skip the 50 MB single-line graph")
    args = parser.parse_args(argv)
    count = args.count if args.all else 50
    counts = run(count, args.cli if args.all else 5, args.seed, huge=not args.no_huge)
    bad = 0
    for kind, tally in counts.items():
        print(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
        bad += sum(v for k, v in tally.items() if k.split()[-1] in ("traceback", "hang", "silent", "unnamed"))
    print(f"tracebacks/hangs/silent passes/unnamed: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
