"""The three real architectures of `demo --model` at full size: op counts, every command's time, the
comparison against msaccucmp side by side, and which op types replay.

For each model (ResNet-50, BERT-base, Wide&Deep) in a fresh folder, as a user types the commands:
  demo --model NAME --no-check   the build: golden step with its tfdbg dump, then the simulated NPU run
  tf_dump                        (run by the demo; its seconds are read from the demo's output)
  vc                             ours, then msaccucmp on the same dump, golden and graph (as atc JSON)
  ac -c                          the whole auto-check with its replays (and with --replay 1000: every abnormal op)
  report                         the HTML report
  replay <one op of each type>   every NPU op type with a task, in one TensorFlow process
and prints one table per model.

Run: `python3 benchmarks/bench_models.py [--size full|reduced] [--model NAME ...] [--reference PATH]`
(the reference defaults to $MSACCUCMP, else the anchor build in ~/.cache/precision_tool/msaccucmp-anchor;
without it the msaccucmp column is left out).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CLI = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]
MODELS = ("resnet50", "bert", "widedeep")


def _run(command: list[str], timeout: int = 3600) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"failed (exit {proc.returncode}): {' '.join(command)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return seconds, proc


def _tool(root: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    return _run([*CLI, "--data", str(root), *args])


def _reference_vc(reference: Path, root: Path, work: Path) -> tuple[float, int, int]:
    """msaccucmp on debug_0's dump, the golden folder and the Build graph written as atc JSON: its time, its
    rows, and how many are identical to the rows of our newest `vc` CSV."""
    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_json
    from precision_tool.workspace import Workspace

    ws = Workspace(root)
    graph_json = work / "graph.json"
    write_graph_json(load_graph(ws.build_graph_files(0)[0]), graph_json)
    dump = next(p for p in (ws.newest_dump_dir(0) or ws.dump_root(0)).rglob("*") if p.is_file()).parent
    out = work / "ref"
    out.mkdir()
    started = time.perf_counter()
    subprocess.run([str(reference), "compare", "-m", str(dump), "-g", str(ws.golden_dir), "-f", str(graph_json),
                    "-out", str(out)], capture_output=True, text=True, timeout=7200)
    seconds = time.perf_counter() - started
    found = sorted(out.glob("result_*.csv"))
    if not found:
        return seconds, 0, 0
    theirs = list(csv.reader(open(found[-1], newline="")))[1:]
    ours_csv = sorted((root / "temp" / "vector_compare").glob("*/result_*[0-9].csv"))[-1]
    ours = list(csv.reader(open(ours_csv, newline="")))[1:]
    return seconds, len(theirs), sum(1 for a, b in zip(theirs, ours) if a == b)


def _replay_types(root: Path) -> tuple[float, dict[str, str]]:
    """One op of each NPU op type with a task, replayed in one call; type → verdict or reason."""
    from precision_tool.formats.ge.ge_graph import load_graph
    from precision_tool.workspace import Workspace

    graph = load_graph(Workspace(root).build_graph_files(0)[0])
    first: dict[str, str] = {}
    for _g, op in graph.iter_ops():
        if op.type not in first and op.type not in ("Data", "Const", "Variable", "NetOutput"):
            first[op.type] = str(op.id)
    seconds, proc = _tool(root, "replay", "-q", *first.values())
    found: dict[str, str] = {}
    lines = proc.stdout.splitlines()
    for n, line in enumerate(lines):
        match = re.match(r"replay \[(\d+)\] \S+ \((\w+)[^)]*\): (.*)", line)
        if match:
            why = f": {lines[n + 1].strip()}" if match.group(3).startswith("CANNOT") and n + 1 < len(lines) else ""
            found[match.group(2)] = (match.group(3) + why)[:150]
    return seconds, {t: found.get(t, "not in the output") for t in first}


def bench(model: str, size: str, reference: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = work / model
        total, proc = _run([*CLI, "demo", str(root), "--model", model, "--size", size, "--no-check"])
        text = proc.stdout
        times = dict(re.findall(r"(build|golden step with its tfdbg dump|simulated NPU run) ([\d.]+) s", text))
        counts = re.search(r"; ([\d,]+) TF ops", text).group(1)
        npu = re.search(r"npu/debug_0, ([\d,]+) ops \(([\d,]+) tasks dumped, ([\d,]+) computing in float16", text)
        tf_dump_s = re.search(r"seconds\s+([\d.]+)", text).group(1)
        golden = re.search(r"written\s+(\d+)", text).group(1)
        vc_s, _ = _tool(root, "vc")
        ref = _reference_vc(reference, root, work) if reference else None
        ac_s, ac = _tool(root, "ac", "-c")
        answer = ac.stdout[ac.stdout.index("answer ─"):].splitlines()[1:3] if "answer ─" in ac.stdout else []
        replay_all_s, replayed = _tool(root, "ac", "-c", "--replay", "1000")  # what `demo --model` runs
        verdict_counts: dict[str, int] = {}
        for match in re.finditer(r"^replay \[\d+\] .*: ([A-Z ]+)$", replayed.stdout, re.MULTILINE):
            verdict_counts[match.group(1)] = verdict_counts.get(match.group(1), 0) + 1
        for match in re.finditer(r"^and (.*) \(each in the replay CSV", replayed.stdout, re.MULTILINE):
            for part in match.group(1).split(", "):  # the counted ones: "120 INHERITED, 3 OK"
                number, _, kind = part.partition(" ")
                verdict_counts[kind] = verdict_counts.get(kind, 0) + int(number)
        report_s, _ = _tool(root, "report")
        replay_s, verdicts = _replay_types(root)
        print(f"\n== {model} ({size}) ==")
        print(f"TF ops {counts}; NPU ops {npu.group(1)}, tasks dumped {npu.group(2)} ({npu.group(3)} in float16); "
              f"golden tensors {golden}")
        print(f"demo --no-check {total:.1f} s: build {times.get('build')} s, golden step + tfdbg "
              f"{times.get('golden step with its tfdbg dump')} s, simulated NPU {times.get('simulated NPU run')} s, "
              f"tf_dump {tf_dump_s} s")
        line = f"vc {vc_s:.1f} s"
        if ref is not None:
            line += f"; msaccucmp {ref[0]:.1f} s ({ref[1]} rows, {ref[2]} identical to ours): {ref[0] / vc_s:.1f}x"
        print(f"{line}; ac -c {ac_s:.1f} s; report {report_s:.1f} s; replay of {len(verdicts)} op types {replay_s:.1f} s")
        print(f"ac -c --replay 1000 (every abnormal op, as demo --model runs it) {replay_all_s:.1f} s: "
              + ", ".join(f"{n} {v}" for v, n in sorted(verdict_counts.items())))
        for row in answer:
            print(f"  {row.strip()}")
        for op_type, verdict in sorted(verdicts.items()):
            print(f"  replay {op_type:32} {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["full", "reduced"], default="full")
    parser.add_argument("--model", action="append", choices=list(MODELS))
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP") or str(
        Path.home() / ".cache" / "precision_tool" / "msaccucmp-anchor" / "msaccucmp"))
    args = parser.parse_args()
    reference = Path(args.reference) if Path(args.reference).exists() else None
    if reference is None:
        print(f"no msaccucmp at {args.reference}: its column is left out", file=sys.stderr)
    for model in args.model or MODELS:
        bench(model, args.size, reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
