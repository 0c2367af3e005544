"""Hostile fusion_result.json files: a seeded corpus of mutations of the real files, an independent
oracle of what each should read as, and a runner that classifies what the tool did with each.

Run as a script for the full corpus through the reader in-process and the real CLI (`ac`):
    python3 tests/real/hostile_fusion.py [--count 1000] [--seed 11] [--cli all|N] [--jobs 2]
It prints the counts of tracebacks, hangs, silent passes (exit 0 / a result where nothing valid could
be read, or a result that differs from the oracle) and errors that do not name the file.
The normal suite runs a sample (tests/real/test_hostile_fusion.py).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

if __package__ in (None, ""):  # run as a script: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.real.fusion_oracle import Unreadable, oracle  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real" / "fusion_result"
PREFIX = "session_and_graph_id_"


@dataclass
class Case:
    name: str
    data: bytes


# --- the corpus ---------------------------------------------------------------------------------------
def _bases() -> list[tuple[str, bytes]]:
    return [(p.stem, p.read_bytes()) for p in sorted(REAL.glob("*.json"))]


def _tree_paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON tree (dict keys / list indexes)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _tree_paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _tree_paths(child, prefix + (index,))
    return out


def _set(tree: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = tree
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return tree


def _loads_any(data: bytes) -> list[Any]:
    text = data.decode("utf-8")
    decoder, values, position = json.JSONDecoder(), [], 0
    while position < len(text):
        if text[position] in " \t\r\n,":
            position += 1
            continue
        value, position = decoder.raw_decode(text, position)
        values.append(value)
    return values


def _dump(values: list[Any], rng: random.Random) -> bytes:
    if len(values) == 1:
        return json.dumps(values[0], indent=rng.choice([None, 4])).encode()
    return "".join(json.dumps(v, indent=4) for v in values).encode()


_WEIRD: list[Callable[[random.Random], Any]] = [
    lambda r: None, lambda r: True, lambda r: False, lambda r: r.randint(-5, 5), lambda r: -1,
    lambda r: 1.5, lambda r: 2.0, lambda r: float("1e308") * 10 if r.random() < 0.5 else 1e308,
    lambda r: "", lambda r: "x", lambda r: "-3", lambda r: " 7 ", lambda r: "1e3", lambda r: "٣",
    lambda r: [], lambda r: [1, "2"], lambda r: {}, lambda r: {"effect_times": "1"},
    lambda r: "9" * r.choice([20, 40, 5000]), lambda r: int("9" * 50),
    lambda r: {"graph_fusion": {}}, lambda r: "P" * r.choice([10, 2000]),
]


def _wrong_type(rng: random.Random, data: bytes) -> bytes:
    values = _loads_any(data)
    index = rng.randrange(len(values))
    paths = _tree_paths(values[index])
    for _ in range(rng.choice([1, 1, 2, 3])):
        path = rng.choice(paths)
        try:
            values[index] = _set(values[index], path, rng.choice(_WEIRD)(rng))
        except (KeyError, IndexError, TypeError):
            pass
        paths = _tree_paths(values[index])
    return _dump(values, rng)


def _missing_key(rng: random.Random, data: bytes) -> bytes:
    values = _loads_any(data)
    index = rng.randrange(len(values))
    paths = [p for p in _tree_paths(values[index]) if p]
    path = rng.choice(paths)
    node = values[index]
    for step in path[:-1]:
        node = node[step]
    if isinstance(node, dict):
        if rng.random() < 0.5:
            del node[path[-1]]
        else:  # renamed key: a typo the writer never makes
            node[str(path[-1]) + rng.choice(["X", "_", " "])] = node.pop(path[-1])
    else:
        del node[path[-1]]
    return _dump(values, rng)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randrange(0, len(data))]


def _flip(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 5])):
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _unbalance(rng: random.Random, data: bytes) -> bytes:
    where = rng.randrange(len(data))
    return data[:where] + rng.choice([b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\"]) + data[where:]


def _non_utf8(rng: random.Random, data: bytes) -> bytes:
    choice = rng.randrange(4)
    if choice == 0:
        where = rng.randrange(len(data))
        return data[:where] + rng.choice([b"\xff", b"\xc3", b"\x80\x80", b"\xed\xa0\x80"]) + data[where:]
    if choice == 1:
        return data.decode().encode("utf-16")
    if choice == 2:
        return data.replace(b"Pass", "Paß".encode("latin-1"), 1)
    return b"\x00" * rng.randrange(1, 64) + data


def _deep(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([1000, 5000, 10000, 100000])
    kind = rng.randrange(3)
    if kind == 0:
        return b"[" * depth + b"]" * depth
    if kind == 1:
        return b'{"a":' * depth + b"1" + b"}" * depth
    # deep nesting inside a valid record, where a count should be
    inner = b"[" * depth + b"]" * depth
    return b'{"graph_fusion": {"A": {"effect_times": ' + inner + b', "match_times": "1"}}}'


def _huge_number(rng: random.Random, data: bytes) -> bytes:
    digits = "9" * rng.choice([4300, 4301, 5000, 100000])
    quoted = rng.random() < 0.5
    value = f'"{digits}"' if quoted else digits
    return data.replace(b'"effect_times": "1"', f'"effect_times": {value}'.encode(), 1) \
        if b'"effect_times": "1"' in data else f'{{"graph_fusion": {{"A": {{"effect_times": {value}, ' \
                                              f'"match_times": "1"}}}}}}'.encode()


def _empty(rng: random.Random, data: bytes) -> bytes:
    return rng.choice([b"", b" ", b"\n\n", b"\t \r\n", b"null", b"0", b"[]", b"{}", b'""', b"[[]]", b"[{}]"])


def _shape_swap(rng: random.Random, data: bytes) -> bytes:
    """Real content in another legal shape (must read the same) or an illegal wrapper."""
    values = _loads_any(data)
    records: list[Any] = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if "graph_fusion" in item or "ub_fusion" in item:
                records.append(item)
            else:
                records += [dict(v, session_and_graph_id=k.removeprefix(PREFIX)) for k, v in item.items()]
    choice = rng.randrange(5)
    if choice == 0:
        return json.dumps(records).encode()
    if choice == 1:
        return "".join(json.dumps(r, indent=4) for r in records).encode()
    if choice == 2:
        return json.dumps({PREFIX + str(r.pop("session_and_graph_id", i)): r for i, r in enumerate(records)}).encode()
    if choice == 3:
        return json.dumps({"data": records}).encode()  # unknown wrapper
    return (",\n".join(json.dumps(r) for r in records)).encode()  # commas between, no list


def _markup(rng: random.Random, data: bytes) -> bytes:
    """Rich-markup-like text where the tool prints a graph id or a pass name (a title, a table cell)."""
    tag = rng.choice(["[/x]", "[bold]", "[red]X[/red]", "[link=file:///etc/passwd]", "\x1b[31m", "a\nb"])
    text = data.decode()
    if rng.random() < 0.5:
        for key in ('"session_and_graph_id": "', '"session_and_graph_id_'):
            if key in text:
                return text.replace(key, key + tag.replace("\\", "\\\\"), 1).encode()
    return text.replace('Pass"', 'Pass' + json.dumps(tag)[1:-1] + '"', 1).encode()


def _big_line(rng: random.Random, data: bytes) -> bytes:
    size = 50 * 1024 * 1024
    kind = rng.randrange(4)
    if kind == 0:  # one pass name 50 MB long
        return b'{"graph_fusion": {"' + b"P" * size + b'": {"effect_times": "1", "match_times": "1"}}}'
    if kind == 1:  # 50 MB of a number
        return b'{"graph_fusion": {"A": {"effect_times": ' + b"7" * size + b', "match_times": "1"}}}'
    if kind == 2:
        return b" " * size + data.replace(b"\n", b"")  # valid, on one 50 MB line
    # valid, on one line, but half a million graphs: `ac` would print a table for each for hours
    record = b'"session_and_graph_id_0_%d": {"graph_fusion": {"P": {"effect_times": "1", "match_times": "1"}}}'
    return b"{" + b", ".join(record % i for i in range(size // len(record))) + b"}"


MUTATIONS: list[tuple[str, Callable[[random.Random, bytes], bytes], int]] = [
    ("truncate", _truncate, 14), ("flip", _flip, 14), ("unbalance", _unbalance, 12),
    ("wrongtype", _wrong_type, 22), ("missingkey", _missing_key, 14), ("nonutf8", _non_utf8, 6),
    ("deep", _deep, 4), ("hugenumber", _huge_number, 4), ("empty", _empty, 3), ("shape", _shape_swap, 6), ("markup", _markup, 3),
]


def corpus(seed: int = 11, count: int = 1000, big: int = 4) -> Iterator[Case]:
    """`count` mutated files (deterministic for a seed), plus `big` files with a 50 MB line."""
    rng = random.Random(seed)
    bases = _bases()
    names, funcs, weights = zip(*MUTATIONS)
    for number in range(count):
        base_name, base = rng.choice(bases)
        index = rng.choices(range(len(funcs)), weights)[0]
        yield Case(f"{number:04d}_{names[index]}_{base_name[:40]}", funcs[index](rng, base))
    for number in range(big):
        base_name, base = bases[number % len(bases)]
        yield Case(f"big{number}_bigline_{base_name[:40]}", _big_line(_Fixed(number), base))


class _Fixed(random.Random):
    """Makes the big-line cases one of each kind, in order."""

    def __init__(self, kind: int) -> None:
        super().__init__(kind)
        self.kind = kind

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        return self.kind


# --- running one case ---------------------------------------------------------------------------------
def in_process(path: Path) -> str:
    """'result' / 'named' (FormatError naming the file) / 'unnamed' / 'traceback:<type>' / 'wrong'."""
    from precision_tool.errors import FormatError
    from precision_tool.formats.ge.fusion_result import parse_fusion_result

    data = path.read_bytes()
    try:
        expected: Any = oracle(data)
    except Unreadable:
        expected = None
    try:
        graphs = parse_fusion_result(path)
    except FormatError as exc:
        if expected is not None:
            return "refused"  # the oracle could read it: a false alarm
        return "named" if str(path) in str(exc) and "\n" not in str(exc) else "unnamed"
    except BaseException as exc:  # noqa: BLE001 - what is being counted
        return f"traceback:{type(exc).__name__}"
    if expected is None or not graphs:
        return "silent"
    got: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for g in graphs:
        for label, passes in (("graph", g.graph_fusion), ("UB", g.ub_fusion)):
            rows = got.setdefault((g.graph_id, label), [])
            rows += [(p.name, p.effect_times, p.match_times) for p in passes if p.effect_times > 0]
    got = {k: sorted(v, key=lambda r: (-r[1], r[0])) for k, v in got.items()}
    return "result" if got == expected else "wrong"


def through_cli(path: Path, work: Path, timeout: float = 120) -> str:
    """The real CLI: `ac` on a workspace holding this file. Same labels as in_process, plus 'hang'."""
    sys.path.insert(0, str(ROOT))
    from tests.real.realfiles import fired_tables

    root = work / "precision_data"
    (root / "fusion").mkdir(parents=True, exist_ok=True)
    target = root / "fusion" / "fusion_result.json"
    target.write_bytes(path.read_bytes())
    try:
        expected: Any = oracle(target.read_bytes())
    except Unreadable:
        expected = None
    env = {"COLUMNS": "200", "NO_COLOR": "1", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(root), "ac"],
                              capture_output=True, text=True, errors="replace", timeout=timeout, cwd=work, env=env)
    except subprocess.TimeoutExpired:
        return "hang"
    text = proc.stdout + proc.stderr
    if "Traceback" in text or proc.returncode not in (0, 1):
        return "traceback"
    if proc.returncode == 1:
        if expected is not None:
            return "refused"
        lines = [line for line in text.splitlines() if str(target) in line]
        return "named" if len(lines) == 1 else "unnamed"
    if expected is None:
        return "silent"
    def shown(tables: dict) -> dict:  # a table cell shows a name without its outer spaces
        return {(g.replace(" ", ""), k): [(n.strip(), e, m) for n, e, m in rows] for (g, k), rows in tables.items()}

    return "result" if shown(fired_tables(proc.stdout)) == shown(expected) else "wrong"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--cli", default="all", help="'all', or how many cases (every Nth) go through the CLI")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hostile_fusion"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    args.out.mkdir(parents=True, exist_ok=True)
    paths = []
    for case in corpus(args.seed, args.count):
        path = args.out / f"{case.name}.json"
        path.write_bytes(case.data)
        paths.append(path)
    start = time.monotonic()
    inproc = Counter()
    for path in paths:
        outcome = in_process(path)
        inproc[outcome] += 1
        if outcome not in ("result", "named"):
            print(f"in-process {outcome}: {path.name}")
    print(f"in-process: {len(paths)} files in {time.monotonic() - start:.1f} s: {dict(inproc)}")
    chosen = paths if args.cli == "all" else [] if int(args.cli) <= 0 else \
        paths[::max(1, len(paths) // int(args.cli))]
    start = time.monotonic()
    from concurrent.futures import ThreadPoolExecutor

    def run(item: tuple[int, Path]) -> tuple[Path, str]:
        work = args.out / "work" / str(item[0])
        return item[1], through_cli(item[1], work)

    cli = Counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        for path, outcome in pool.map(run, enumerate(chosen)):
            cli[outcome] += 1
            if outcome not in ("result", "named"):
                print(f"cli {outcome}: {path.name}")
    print(f"cli (ac): {len(chosen)} files in {time.monotonic() - start:.1f} s: {dict(cli)}")
    bad = sum(n for k, n in (inproc + cli).items() if k not in ("result", "named"))
    print(f"tracebacks {inproc['traceback'] + sum(n for k, n in inproc.items() if k.startswith('traceback:')) + cli['traceback']}"
          f", hangs {cli['hang']}, silent passes {inproc['silent'] + cli['silent'] + inproc['wrong'] + cli['wrong']}"
          f", files not named {inproc['unnamed'] + cli['unnamed']}, false refusals {inproc['refused'] + cli['refused']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
