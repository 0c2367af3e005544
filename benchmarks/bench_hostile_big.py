"""Hostile input at scale (issue 28, item 4): every command ends in seconds, in bounded memory, with one line.

Builds each big input in a temp folder and runs the real commands on it (`python3 precision_tool/cli.py
--data WS ...`), printing per run: wall time, peak RSS, exit status and the line the command ended with.

    python3 benchmarks/bench_hostile_big.py [--cases graph,ops,dump,npy,files,damaged] [--graph-mb 50]
        [--ops 45814] [--tensor-gb 10] [--files 1000000] [--rss-limit-gb 6] [--timeout 300]
        [--protobuf-limit 120] [--tool DIR] [--keep DIR]

Cases:
  graph    a 50 MB Build graph on ONE line (a synthetic graph with GE's attributes, newlines turned into
           spaces): `ls` (parse + cache), `ls` again, `ni OP` (one op block); protobuf's text_format beside it
  ops      45,814 ops (a light synthetic graph) on one line: `ni OP` on a fresh workspace, then again
  dump     a 10 GB NPU dump (a sparse file: one float16 ND output of 5 Gi elements, in place of a Relu's dump
           of a 60-op workspace from big_workspace.py): ls dump, pt, cp, dc, dc -f, ni
  npy      a 10 GB golden .npy (sparse, in place of a golden tensor of that workspace): pt, cp, ni
  files    1,000,000 files (hard links of a few small files) in tf/dump: ni, pt KEY; then in the NPU dump
           folder: ls dump -n, ni, pt OP:output:0, dc FOLDER, ls dump (all 1,000,000 rows)
  damaged  a tfdbg v1 record whose float32 [3] tensor holds 5 float_val values (tf_dump), and an NPU dump
           whose header length is 0 with 1,580 bytes after it (dc)

Two memory figures per run: peak RSS, the ru_maxrss os.wait4 reports for the command (its own and its
helpers', one process at a time; it counts pages of memory-mapped files too; the commands are started by a
small spawner process, so none inherits the benchmark's own size), and the peak anonymous
memory of the command and its helpers together, which a watchdog samples every 50 ms (Pss_Anon: a page a
forked helper shares with its parent counts once). The watchdog kills a command whose anonymous
memory passes --rss-limit-gb (the machine is shared) and one that runs past --timeout; such runs print
KILLED. The line shown is a refusal or damage line when the command printed one, else its last line. `--tool DIR` runs another checkout's cli.py on the same inputs (the
before figures came from `--tool` on the main branch).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRAPH_FILE = "ge_proto_00000001_graph_1_Build.txt"
T0_US = 1_718_260_502_000_000


# --- running one command ------------------------------------------------------------------------------
def _anon_kb(pid: int) -> int:
    """Anonymous memory of a process and its children (KB), each shared page counted once (Pss_Anon of
    /proc/PID/smaps_rollup: a forked helper shares its parent's pages); 0 when it is gone. Pages of
    memory-mapped files are left out: the kernel drops them under pressure, they are not the tool's to free."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/smaps_rollup") as handle:
                total += next((int(line.split()[1]) for line in handle if line.startswith("Pss_Anon:")), 0)
            with open(f"/proc/{current}/task/{current}/children") as handle:
                pending += [int(c) for c in handle.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run(tool: Path, root: Path, args: list[str], timeout: float, rss_limit_kb: int, wants: tuple[str, ...] = ()) -> dict:
    """Run one command of the tool on workspace `root`: time, peak RSS, status, the lines it printed."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "PRECISION_TOOL_NO_COLOR": "1",
           "PYTHONPATH": str(tool)}
    command = [sys.executable, str(tool / "precision_tool" / "cli.py"), "--data", str(root), *args]
    return SPAWNER.measure(command, env, tool, timeout, rss_limit_kb, wants)


class Spawner:
    """Starts the measured commands from a small process started first. Linux puts what a process held
    before exec into its ru_maxrss, so a command forked by this process (grown by the builders) would report
    at least this one's size; the spawner stays at ~10 MB and keeps only the lines worth showing."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def measure(self, command: list[str], env: dict, cwd: Path, timeout: float, rss_limit_kb: int,
                wants: tuple[str, ...] = ()) -> dict:
        import json

        if self.process is None:
            self.process = subprocess.Popen([sys.executable, __file__, "--spawner"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps([command, env, str(cwd), timeout, rss_limit_kb, wants]) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())  # type: ignore[no-any-return]


SPAWNER = Spawner()


def spawner_loop() -> None:
    """The spawner's side: one JSON request a line on stdin, one JSON result a line on stdout."""
    import json

    for request in sys.stdin:
        command, env, cwd, timeout, rss_limit_kb, wants = json.loads(request)
        print(json.dumps(measure(command, env, Path(cwd), timeout, rss_limit_kb, tuple(wants))), flush=True)


def measure(command: list[str], env: dict, cwd: Path, timeout: float, rss_limit_kb: int,
            wants: tuple[str, ...] = ()) -> dict:
    """Wall time, ru_maxrss (os.wait4), exit status, line count, last line and the first line holding each
    of TELLING and `wants` of one process; a watchdog kills it past `timeout` or `rss_limit_kb` anonymous."""
    out = tempfile.TemporaryFile()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=env, cwd=cwd, start_new_session=True)
    killed: list[str] = []
    peak_anon = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            anon = _anon_kb(process.pid)
            peak_anon[0] = max(peak_anon[0], anon)
            if time.perf_counter() - started > timeout:
                killed.append(f"KILLED after {timeout:.0f} s")
            elif anon > rss_limit_kb:
                killed.append(f"KILLED at {rss_limit_kb / 1e6:.1f} GB anonymous memory")
            if killed:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except OSError:
                    pass
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    watcher.join()
    out.seek(0)
    count, last, traceback, found = 0, "", False, {}
    for raw in out:  # line by line: a million-row listing is not held
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if not line.strip():
            continue
        count, last = count + 1, line
        traceback = traceback or "Traceback (most recent call last)" in line
        for word in (*TELLING, *wants):
            if word not in found and word in line:
                found[word] = line
    return {"wall": wall, "rss_mb": usage.ru_maxrss / 1024, "anon_mb": peak_anon[0] / 1024,
            "status": os.waitstatus_to_exitcode(status), "killed": killed[0] if killed else "",
            "count": count, "last": last, "found": found, "traceback": traceback}


# the line worth showing when a command printed it: a refusal or a damaged file, rather than its last line
TELLING = ("needs about", "header length 0", "TensorFlow refuses", "more than --max-files")


def show(label: str, result: dict, line: str | None = None) -> None:
    if line is None:
        line = next((result["found"][word] for word in TELLING if word in result["found"]), None)
    if line is None:
        line = result["last"] or "(nothing printed)"
    state = result["killed"] or ("TRACEBACK" if result["traceback"] else f"exit {result['status']}")
    print(f"  {label:<34} {result['wall']:7.2f} s {result['rss_mb']:7.0f} MB {result['anon_mb']:7.0f} MB  {state:<8} "
          f"{result['count']:>7} lines | {line[:230]}", flush=True)


# --- building the inputs --------------------------------------------------------------------------------
def one_line_graph(path: Path | str, target_bytes: int = 0, ops: int = 0, light: bool = False) -> tuple[int, str]:
    """A synthetic Build graph written on one line (every newline a space, indentation dropped): `ops` ops,
    or as many as fill `target_bytes`. Returns (ops, the name of an op in the middle)."""
    from precision_tool.formats.ge.ge_synthetic import synthetic_build_model
    from precision_tool.formats.ge.ge_text_write import format_model

    if not ops:
        per_op = len(_collapse(format_model(synthetic_build_model(200, light=light)))) / 200
        ops = int(target_bytes / per_op)
    model = synthetic_build_model(ops, light=light)
    text = _collapse(format_model(model))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return ops, model.graphs[0].ops[ops // 2].name


def in_child(function: str, *args: object) -> object:
    """Call a builder of this module in a child process: the parent stays small, so the commands it starts
    do not inherit its high-water mark (Linux counts a process's RSS before exec in its ru_maxrss)."""
    import json

    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_hostile_big as b; "
            f"print(json.dumps(b.{function}(*json.loads(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps([str(a) if isinstance(a, Path) else a
                                                                   for a in args])],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _collapse(text: str) -> str:
    return " ".join(line.strip() for line in text.split("\n"))


def small_workspace(root: Path) -> dict:
    """A 60-op workspace (graph, dumps, golden) from big_workspace.py."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from big_workspace import make_workspace

    return make_workspace(root, ops=60)


def dump_folder(root: Path) -> Path:
    return next(p.parent for p in (root / "npu" / "debug_0" / "dump").rglob("*.*.*.*") if p.is_file())


def big_dump(folder: Path, gib: float, op: str = "net/stage0/block0/Relu") -> Path:
    """A sparse float16 ND dump of `gib` GiB in place of the dump of `op` (a Relu of the small workspace, so
    `ni` shows it)."""
    from tests.hostile.big_inputs import sparse_dump

    for old in folder.glob(f"Relu.{op.replace('/', '_')}.*"):
        old.unlink()
    return sparse_dump(folder, op, int(gib * (1 << 30)) // 2)


def many_links(folder: Path, template: Path, count: int, name_of) -> None:
    """`count` hard links of `template` in `folder` (cheap: one inode per 60,000 names, under ext4's limit of
    65,000 links; the copies linked to sit beside the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    link = os.link
    source = template
    for number in range(count):
        if number % 60_000 == 0:
            source = folder.parent / f"link_source_{number}"
            shutil.copyfile(template, source)
        link(source, folder / name_of(number))


# --- cases ---------------------------------------------------------------------------------------------
def case_graph(args: argparse.Namespace, temp: Path) -> None:
    root = temp / "graph_ws"
    path = root / "npu" / "debug_0" / "graph" / GRAPH_FILE
    ops, middle = in_child("one_line_graph", path, int(args.graph_mb * 1e6))
    size = path.stat().st_size
    print(f"\n[graph] {size / 1e6:.1f} MB on one line, {ops} ops (synthetic Build graph, GE's attributes)")
    name = middle.rsplit("/", 1)[-1]
    show("ls -n NAME (parse + cache)", run(args.tool, root, ["ls", "-n", name], args.timeout, args.rss_kb))
    show("ls -n NAME (from the cache)", run(args.tool, root, ["ls", "-n", name], args.timeout, args.rss_kb))
    result = run(args.tool, root, ["ni", middle], args.timeout, args.rss_kb, (middle,))
    show("ni OP (cache + its block)", result, result["found"].get(middle))
    protobuf_side(path, args.protobuf_limit, args.rss_kb)
    shutil.rmtree(root)


def protobuf_side(path: Path, limit: float, rss_kb: int) -> None:
    """google.protobuf.text_format.Parse on the same file, in a child with a time limit."""
    code = ("import sys, time; sys.path.insert(0, %r)\n"
            "from google.protobuf import text_format\n"
            "from precision_tool.formats.ge.ge_proto import model_def_class\n"
            "text = open(%r).read(); start = time.perf_counter()\n"
            "message = text_format.Parse(text, model_def_class()(), allow_unknown_field=True)\n"
            "print(f'parsed {len(message.graph[0].op)} ops in {time.perf_counter() - start:.2f} s')\n"
            ) % (str(ROOT), str(path))
    result = SPAWNER.measure([sys.executable, "-c", code], dict(os.environ), ROOT, limit, rss_kb)
    if result["killed"]:
        print(f"  {'protobuf text_format.Parse':<34} skipped: {result['killed']} (--protobuf-limit)", flush=True)
        return
    show("protobuf text_format.Parse", result)


def case_ops(args: argparse.Namespace, temp: Path) -> None:
    root = temp / "ops_ws"
    path = root / "npu" / "debug_0" / "graph" / GRAPH_FILE
    ops, middle = in_child("one_line_graph", path, 0, args.ops, True)
    print(f"\n[ops] {ops} ops on one line, {path.stat().st_size / 1e6:.1f} MB (light synthetic graph)")
    result = run(args.tool, root, ["ni", middle], args.timeout, args.rss_kb, (middle,))
    show("ni OP (fresh workspace: index + op)", result, result["found"].get(middle))
    result = run(args.tool, root, ["ni", middle], args.timeout, args.rss_kb, (middle,))
    show("ni OP (index cached)", result, result["found"].get(middle))
    protobuf_side(path, args.protobuf_limit, args.rss_kb)
    shutil.rmtree(root)


def case_dump(args: argparse.Namespace, temp: Path) -> None:
    root = temp / "dump_ws"
    small_workspace(root)
    path = big_dump(dump_folder(root), args.tensor_gb)
    name = path.name
    print(f"\n[dump] {path.stat().st_size / 2 ** 30:.1f} GiB NPU dump (sparse), one float16 output: {name}")
    runs = [("ls dump -n block0/Relu", ["ls", "dump", "-n", "block0/Relu"]), ("pt FILE:output:0", ["pt", f"{name}:output:0"]),
            ("cp FILE:output:0 FILE:output:0", ["cp", f"{name}:output:0", f"{name}:output:0"]),
            ("dc FILE", ["dc", name, "-o", str(temp / "dc_out")]),
            ("dc FILE -f NCHW", ["dc", name, "-f", "NCHW", "-o", str(temp / "dc_out_f")]),
            ("ni net/stage0/block0/Relu", ["ni", "net/stage0/block0/Relu"])]
    for label, argv in runs:
        show(label, run(args.tool, root, argv, args.timeout, args.rss_kb))
        shutil.rmtree(temp / "dc_out", ignore_errors=True)
        shutil.rmtree(temp / "dc_out_f", ignore_errors=True)
    shutil.rmtree(root)


def case_npy(args: argparse.Namespace, temp: Path) -> None:
    from tests.hostile.big_inputs import sparse_npy

    root = temp / "npy_ws"
    small_workspace(root)
    golden = root / "tf" / "dump"
    victim = sorted(golden.glob("*.npy"))[0]
    key = victim.name.rsplit(".", 2)[0]
    victim.unlink()
    path = sparse_npy(victim, int(args.tensor_gb * (1 << 30)) // 4)
    print(f"\n[npy] {path.stat().st_size / 2 ** 30:.1f} GiB golden .npy (sparse): {path.name}")
    for label, argv in [("pt NPY", ["pt", str(path)]), ("cp NPY NPY", ["cp", str(path), str(path)]),
                        ("ni OP (its golden side)", ["ni", key.replace("_", "/", 1)])]:
        show(label, run(args.tool, root, argv, args.timeout, args.rss_kb))
    shutil.rmtree(root)


def case_files(args: argparse.Namespace, temp: Path) -> None:
    root = temp / "files_ws"
    small_workspace(root)
    golden = root / "tf" / "dump"
    template = sorted(golden.glob("*.npy"))[0]
    started = time.perf_counter()
    many_links(golden, template, args.files, lambda n: f"bulk_op{n}.0.{T0_US + n}.npy")
    print(f"\n[files] {args.files} golden .npy in tf/dump (hard links, made in {time.perf_counter() - started:.0f} s)")
    op = "net/stage0/block0/Conv2D"
    for label, argv in [("ni OP", ["ni", op]), ("pt KEY", ["pt", "bulk_op7.0"])]:
        show(label, run(args.tool, root, argv, args.timeout, args.rss_kb))
    shutil.rmtree(golden)
    golden.mkdir()
    folder = dump_folder(root)
    template = next(p for p in folder.iterdir() if p.is_file())
    started = time.perf_counter()
    many_links(folder, template, args.files,
               lambda n: f"Relu.net_bulk_Relu{n}.{n}.0.{T0_US + n}")
    print(f"[files] {args.files} NPU dumps in one dump folder (hard links, made in {time.perf_counter() - started:.0f} s)")
    for label, argv in [("ls dump -n Relu7", ["ls", "dump", "-n", "Relu7"]), ("ni OP", ["ni", op]),
                        ("pt OP:output:0", ["pt", f"{op}:output:0"]),
                        ("dc FOLDER", ["dc", str(folder), "-o", str(temp / "dc_many")]),
                        ("ls dump (every file)", ["ls", "dump"])]:
        show(label, run(args.tool, root, argv, args.timeout, args.rss_kb))
        shutil.rmtree(temp / "dc_many", ignore_errors=True)
    shutil.rmtree(root)


def case_damaged(args: argparse.Namespace, temp: Path) -> None:
    root = temp / "damaged_ws"
    small_workspace(root)
    from tests.hostile.big_inputs import tfdbg_overfull_record, zero_header_dump

    run_dir = root / "tf" / "tf_debug" / "run_1718260502000000_0"
    tfdbg_overfull_record(run_dir)
    shutil.rmtree(root / "tf" / "dump")
    print("\n[damaged] a tfdbg v1 float32 [3] record holding 5 float_val values; an NPU dump with header length 0")
    show("tf_dump", run(args.tool, root, ["tf_dump"], args.timeout, args.rss_kb))
    path = zero_header_dump(dump_folder(root))
    show("dc FILE (header length 0)", run(args.tool, root, ["dc", path.name, "-o", str(temp / "dc0")],
                                           args.timeout, args.rss_kb))
    shutil.rmtree(root)


CASES = {"graph": case_graph, "ops": case_ops, "dump": case_dump, "npy": case_npy, "files": case_files,
         "damaged": case_damaged}


def main() -> int:
    if sys.argv[1:] == ["--spawner"]:
        spawner_loop()
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated (default: all)")
    parser.add_argument("--graph-mb", type=float, default=50.0)
    parser.add_argument("--ops", type=int, default=45_814)
    parser.add_argument("--tensor-gb", type=float, default=10.0, help="GiB of the big dump and .npy")
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--rss-limit-gb", type=float, default=6.0, help="kill a command past this resident size")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--protobuf-limit", type=float, default=120.0, help="seconds given to protobuf's parser")
    parser.add_argument("--tool", type=Path, default=ROOT, help="the checkout whose cli.py runs (default: this one)")
    parser.add_argument("--keep", type=Path, help="build inputs here (default: a temp folder, removed)")
    args = parser.parse_args()
    args.rss_kb = int(args.rss_limit_gb * 1e6)
    args.tool = args.tool.resolve()
    print(f"tool: {args.tool}; load average {os.getloadavg()[0]:.2f}; cores {len(os.sched_getaffinity(0))}")
    print(f"  {'command':<34} {'wall':>9} {'peak RSS':>10} {'anon':>7}  {'status':<8} {'printed':>12} | last line")
    temp = Path(tempfile.mkdtemp(prefix="bench_hostile_big_", dir=args.keep))
    try:
        for name in args.cases.split(","):
            CASES[name](args, temp)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
