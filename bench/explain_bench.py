#!/usr/bin/env python3
"""`vxperf explain` on traces of the size of real runs, side by side with Holistic Trace Analysis
(HTA 0.6.1, through bench/hta_numbers.py) on the same files and the same machine.

Two steps. `make` writes big traces from a real one: it repeats the source's profiler steps (the
events that start from the first ProfilerStep#N to the end of the last one, with the GPU events
their launches correlate) until the file reaches the size asked for (uncompressed), each
repetition shifted by the steps' span (the time from the first step's start to the end of the
last event of the block, plus the gap the source leaves between two steps), its ids (args
"correlation", "External id", "Python id", "Python parent id", "Ev Idx", flow events' "id") moved
to a range of their own per repetition (equal ids stay equal, no two repetitions share one) and
its ProfilerStep#N renumbered consecutively. A source without profiler steps (or with --whole)
repeats its whole event list. The events before the first step are written once, those after the
last one once after the last repetition; the other top-level keys (distributedInfo,
deviceProperties, ...) are kept. The output is streamed, one event at a time, never held whole.
With --ranks N it writes N files into a directory (distributedInfo.rank = 0..N-1, sources taken
in turn when several are given), each with the first file's number of repetitions (every rank
the same profiler steps, as in a real run), so of about the size asked for.

  python3 bench/explain_bench.py make SOURCE.json[.gz]... --out DIR [--size-mb 1024] [--ranks 1]
                                      [--gzip] [--whole]

`run` times `vxperf explain --json DIR` (wall seconds, CPU seconds, and peak RSS from the kernel
through /usr/bin/time, fastest of --repeats runs) and, with --hta-python (the python of a venv
where HTA is installed), bench/hta_numbers.py on the same directory once, under a wall-clock
limit (--hta-timeout; past it HTA is stopped and its time is given as a lower bound) and an
address-space limit (--hta-max-gb, so a run out of memory fails alone instead of waking the OOM
killer), then compares the numbers with bench/explain_vs_hta.py and prints one markdown table:
input size (uncompressed), vxperf time, vxperf peak RSS (MB and as a fraction of the input), HTA
time, HTA peak RSS, the ratios.

  python3 bench/explain_bench.py run DIR... --vxperf build/vxperf [--hta-python VENV/bin/python]
                                     [--threads N] [--repeats 3] [--keep-json DIR] [--json FILE]

Standard library only.
"""

from __future__ import annotations

import argparse
import decimal
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
ARG_IDS = ("correlation", "External id", "Python id", "Python parent id", "Ev Idx")
EVENT_IDS = ("id", "bind_id")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_driver")
SLOT = "\x00%d\x00"
SLOT_TEXT = re.compile(r'"\\u0000(\d+)\\u0000"')
CHUNK = 1 << 22
MB = 1e6
MIB = 1 << 20


# ---------------------------------------------------------------------------------------------
# make


def load_trace(path: str) -> Dict[str, Any]:
    """The whole source trace; floats as Decimal (fractional timestamps keep every digit)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f, parse_float=decimal.Decimal)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise SystemExit("%s: not a Kineto trace (no traceEvents list)" % path)
    return data


def plain(value: Any) -> Any:
    """value with every Decimal made a float (what json.dumps can write)."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and "." not in str(value) \
            else float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def end_of(event: Dict[str, Any]) -> Any:
    return event["ts"] + (event.get("dur") or 0)


@dataclass
class Template:
    """One event serialized once, with holes for what changes from one repetition to the next."""
    parts: List[str]
    ts: Any = None                        # the source's timestamp (int or Decimal), or None
    ids: List[int] = field(default_factory=list)
    step: Optional[int] = None            # index of the profiler step in the block, or None
    ts_slot: int = -1
    id_slots: List[int] = field(default_factory=list)
    step_slot: int = -1

    def render(self, shift: Any, id_of: Any, step_name: Any) -> str:
        values: List[str] = [""] * (len(self.parts) // 2)
        if self.ts_slot >= 0:
            values[self.ts_slot] = str(self.ts + shift)
        for slot, old in zip(self.id_slots, self.ids):
            values[slot] = str(id_of(old))
        if self.step_slot >= 0:
            values[self.step_slot] = json.dumps(step_name(self.step))
        out = []
        for i, part in enumerate(self.parts):
            out.append(values[int(part)] if i % 2 else part)
        return "".join(out)


def template(event: Dict[str, Any], step: Optional[int], stretch: Any = 0) -> Template:
    """Serializes event with holes: ts, every integer id, the ProfilerStep name."""
    holes: List[str] = []
    t = Template(parts=[])

    def hole(kind: str) -> str:
        holes.append(kind)
        return SLOT % (len(holes) - 1)

    copy = dict(event)
    if "args" in copy and isinstance(copy["args"], dict):
        copy["args"] = dict(copy["args"])
    if "ts" in copy and isinstance(copy["ts"], (int, decimal.Decimal)):
        t.ts = copy["ts"]
        t.ts_slot = len(holes)
        copy["ts"] = hole("ts")
    if stretch and "dur" in copy:
        copy["dur"] = copy["dur"] + stretch
    for key in EVENT_IDS:
        if is_int(copy.get(key)):
            t.ids.append(copy[key])
            t.id_slots.append(len(holes))
            copy[key] = hole("id")
    args = copy.get("args")
    if isinstance(args, dict):
        for key in ARG_IDS:
            if is_int(args.get(key)):
                t.ids.append(args[key])
                t.id_slots.append(len(holes))
                args[key] = hole("id")
    if step is not None:
        t.step = step
        t.step_slot = len(holes)
        copy["name"] = hole("step")
    text = json.dumps(plain(copy))
    pieces = SLOT_TEXT.split(text)
    if len(pieces) != 2 * len(holes) + 1:
        raise SystemExit("cannot template event %r" % (event,))
    t.parts = pieces
    return t


@dataclass
class Plan:
    """A source trace cut into the part written once before, the block repeated, the rest."""
    head: List[Tuple[str, Any]]           # top-level keys before traceEvents, (key, value)
    tail: List[Tuple[str, Any]]           # top-level keys after it
    events: List[Dict[str, Any]]
    sides: List[int]                      # per event: -1 before the block, 0 in it, 1 after
    step_numbers: Dict[str, int]          # ProfilerStep#N name -> index in the block
    span: Any                             # the shift from one repetition to the next
    steps: int                            # profiler steps per repetition
    first_step: int                       # the number of the first one
    id_base: int                          # the ids of repetition k >= 1 start here
    id_count: int                         # distinct ids (union of every id key)
    id_index: Dict[int, int]
    stretched: List[Dict[str, Any]]       # events before the block that enclose all of it


def plan(data: Dict[str, Any], whole: bool) -> Plan:
    """Cuts the source: the block to repeat, the shift, the ids to move."""
    events: List[Dict[str, Any]] = [e for e in data["traceEvents"] if isinstance(e, dict)]
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, decimal.Decimal))]
    if not timed:
        raise SystemExit("source has no timed events")
    steps = sorted((e for e in timed if e.get("ph") == "X" and e.get("cat") != "gpu_user_annotation"
                    and STEP_NAME.match(str(e.get("name", "")))), key=lambda e: e["ts"])
    if whole or not steps:
        start = min(e["ts"] for e in timed)
        stop = max(end_of(e) for e in timed) + 1
        gap: Any = 1
        steps = []
    else:
        start, stop = steps[0]["ts"], end_of(steps[-1])
        gaps = [b["ts"] - end_of(a) for a, b in zip(steps, steps[1:]) if b["ts"] > end_of(a)]
        gap = min(gaps) if gaps else 1
    step_numbers = {e["name"]: i for i, e in enumerate(steps)}

    def in_window(e: Dict[str, Any]) -> bool:
        return "ts" in e and e.get("ph") != "M" and start <= e["ts"] < stop

    # GPU events (and their ac2g flow ends) go with the launch they correlate with.
    launched = set()
    for e in timed:
        corr = (e.get("args") or {}).get("correlation")
        if in_window(e) and e.get("cat") not in GPU_CATS and corr is not None:
            launched.add(corr)

    def side(e: Dict[str, Any]) -> int:
        """-1 before the block, 0 in it, 1 after it."""
        if e.get("ph") == "M" or not isinstance(e.get("ts"), (int, decimal.Decimal)):
            return -1
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") == "ac2g" and e.get("ph") in ("s", "f", "t"):
            corr = e.get("id")
        if e.get("cat") in GPU_CATS or e.get("cat") == "ac2g":
            if corr is not None and corr in launched:
                return 0
        if e["ts"] < start:
            return -1
        return 0 if e["ts"] < stop else 1

    sides = [side(e) for e in events]
    block_events = [e for e, s in zip(events, sides) if s == 0]
    last_end = max([end_of(e) for e in block_events if "ts" in e] + [stop])
    span = last_end - start + gap
    if span == int(span):                 # "dur": 68.0 would make every shifted ts a float
        span = int(span)
    stretched = [e for e, s in zip(events, sides)
                 if s == -1 and e.get("ph") == "X" and "ts" in e and end_of(e) >= last_end]

    ids = set()
    for e in events:
        for key in EVENT_IDS:
            if is_int(e.get(key)):
                ids.add(e[key])
        args = e.get("args")
        if isinstance(args, dict):
            for key in ARG_IDS:
                if is_int(args.get(key)):
                    ids.add(args[key])
    ordered = sorted(ids)
    keys = list(data.keys())
    at = keys.index("traceEvents")
    return Plan(
        head=[(k, data[k]) for k in keys[:at]], tail=[(k, data[k]) for k in keys[at + 1:]],
        events=events, sides=sides, step_numbers=step_numbers, span=span, steps=len(steps),
        first_step=int(steps[0]["name"].rsplit("#", 1)[1]) if steps else 0,
        id_base=(ordered[-1] + 1) if ordered else 0, id_count=len(ordered),
        id_index={v: i for i, v in enumerate(ordered)}, stretched=stretched,
    )


class Writer:
    """Buffered text out to a plain or gzip file; counts the uncompressed bytes."""

    def __init__(self, path: str, compress: bool) -> None:
        self.raw: IO[bytes] = gzip.open(path, "wb", compresslevel=6) if compress \
            else open(path, "wb")
        self.buf: List[str] = []
        self.held = 0
        self.size = 0

    def write(self, text: str) -> None:
        self.buf.append(text)
        self.held += len(text)
        if self.held >= CHUNK:
            self.flush()

    def flush(self) -> None:
        data = "".join(self.buf).encode("utf-8")
        self.raw.write(data)
        self.size += len(data)
        self.buf, self.held = [], 0

    def close(self) -> None:
        self.flush()
        self.raw.close()


def make_file(data: Dict[str, Any], out: str, size: int, rank: Optional[int], compress: bool,
              whole: bool, reps: Optional[int] = None) -> Tuple[int, int, int]:
    """Writes one trace of about `size` bytes (uncompressed) to out, or of `reps` repetitions;
    returns (bytes, repetitions, events)."""
    p = plan(data, whole)
    events, sides, step_numbers = p.events, p.sides, p.step_numbers
    if rank is not None:
        head = []
        for k, v in p.head:
            if k == "distributedInfo" and isinstance(v, dict):
                v = dict(v, rank=rank)
            head.append((k, v))
        p.head = head
        if not any(k == "distributedInfo" for k, _ in p.head + p.tail):
            p.head.append(("distributedInfo", {"rank": rank}))

    def id_in(k: int) -> Any:
        if k == 0:
            return lambda old: old
        base = p.id_base + (k - 1) * p.id_count
        return lambda old: base + p.id_index[old]

    def step_in(k: int) -> Any:
        return lambda j: "ProfilerStep#%d" % (p.first_step + k * p.steps + j)

    block = [template(e, step_numbers.get(str(e.get("name"))))
             for e, s in zip(events, sides) if s == 0]
    after = [template(e, None) for e, s in zip(events, sides) if s == 1]

    def rep_text(k: int) -> str:
        shift, ids, names = k * p.span, id_in(k), step_in(k)
        return ",\n".join(t.render(shift, ids, names) for t in block)

    # How many repetitions: the fixed part plus the block's size at the first and at a far
    # repetition (ids and timestamps grow a digit or so).
    fixed_events = [template(e, None) for e, s in zip(events, sides) if s == -1]
    fixed = sum(len(t.render(0, id_in(0), step_in(0))) + 2 for t in fixed_events + after) + 4096
    first = len(rep_text(0).encode("utf-8")) + 2
    guess = max(1, (size - fixed) // max(first, 1))
    far = len(rep_text(max(guess - 1, 0)).encode("utf-8")) + 2
    if reps is None:
        reps = max(1, -(-(size - fixed) // ((first + far) // 2)))
    stretch = (reps - 1) * p.span
    stretched_ids = {id(e) for e in p.stretched}
    before = [template(e, None, stretch if id(e) in stretched_ids else 0)
              for e, s in zip(events, sides) if s == -1]

    w = Writer(out, compress)
    count = 0
    w.write("{")
    for k, v in p.head:
        w.write("\n  %s: %s," % (json.dumps(k), json.dumps(plain(v))))
    w.write('\n  "traceEvents": [')
    sep = "\n"
    for t in before:
        w.write(sep + t.render(0, id_in(0), step_in(0)))
        sep, count = ",\n", count + 1
    for k in range(reps):
        shift, ids, names = k * p.span, id_in(k), step_in(k)
        for t in block:
            w.write(sep + t.render(shift, ids, names))
            sep, count = ",\n", count + 1
    last = reps - 1
    for t in after:
        w.write(sep + t.render(last * p.span, id_in(last), step_in(last)))
        sep, count = ",\n", count + 1
    w.write("\n  ]")
    for k, v in p.tail:
        w.write(",\n  %s: %s" % (json.dumps(k), json.dumps(plain(v))))
    w.write("\n}\n")
    w.close()
    return w.size, reps, count


def cmd_make(args: argparse.Namespace) -> None:
    sources = [load_trace(s) for s in args.sources]
    size = int(args.size_mb * MIB)
    ext = ".json.gz" if args.gzip else ".json"
    if args.ranks:
        os.makedirs(args.out, exist_ok=True)
        targets = [(os.path.join(args.out, "rank-%d%s" % (r, ext)), r) for r in range(args.ranks)]
    else:
        parent = os.path.dirname(os.path.abspath(args.out))
        os.makedirs(parent, exist_ok=True)
        out = args.out[:-len(".json")] if args.out.endswith(".json") else args.out
        out = out if out.endswith(ext) or (args.gzip and out.endswith(".json.gz")) else out + ext
        if not args.gzip and out.endswith(".gz"):
            raise SystemExit("--out %s: a .gz name needs --gzip" % args.out)
        targets = [(out, None)]
    reps: Optional[int] = None
    for i, (path, rank) in enumerate(targets):
        start = time.perf_counter()
        # Every rank the same steps (as in a real run): the first file's repetitions for all.
        written, reps, count = make_file(sources[i % len(sources)], path, size, rank, args.gzip,
                                         args.whole, reps)
        print("wrote %s: %d events, %d repetitions, %.1f MiB uncompressed, %.1f MiB on disk, "
              "%.1f s" % (path, count, reps, written / MIB, os.path.getsize(path) / MIB,
                          time.perf_counter() - start), file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# run


def trace_files(target: str) -> List[str]:
    if os.path.isfile(target):
        return [target]
    return sorted(os.path.join(target, f) for f in os.listdir(target)
                  if f.endswith((".json", ".json.gz")))


def uncompressed_size(path: str) -> int:
    if not path.endswith(".gz"):
        return os.path.getsize(path)
    total = 0
    d = zlib.decompressobj(wbits=47)
    with open(path, "rb") as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            total += len(d.decompress(chunk))
            while d.unused_data:             # several gzip members
                rest = d.unused_data
                d = zlib.decompressobj(wbits=47)
                total += len(d.decompress(rest))
    return total + len(d.flush())


def run_measured(argv: Sequence[str], stdout: IO[Any], limit: Optional[float] = None,
                 max_gb: Optional[float] = None) -> Tuple[float, float, int, int, str, bool]:
    """Runs argv under /usr/bin/time (a small parent: the peak RSS of a child forked from this
    Python would start at this process's own) and, with limit, under timeout(1) (its peak RSS
    includes the command's, which it waits for); returns (wall seconds, CPU seconds, peak RSS
    bytes, exit status, stderr, timed out)."""
    inner = list(argv)
    if limit is not None:
        inner = ["timeout", "-k", "30", str(int(limit))] + inner
    if max_gb is not None:
        inner = ["sh", "-c", 'ulimit -v %d && exec "$@"' % int(max_gb * 1024 * 1024), "sh"] + inner
    with tempfile.NamedTemporaryFile("r") as times, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-o", times.name, "-f", "%U %S %M"] + inner,
                              stdout=stdout, stderr=err)
        wall = time.perf_counter() - start
        fields = times.read().split()
        user, system, rss_kb = fields[-3:]
        err.seek(0)
        timed_out = limit is not None and proc.returncode in (124, 137) and wall >= limit
        return (wall, float(user) + float(system), int(rss_kb) * 1024, proc.returncode,
                err.read().decode(errors="replace"), timed_out)


def run_one(target: str, args: argparse.Namespace, keep: str) -> Dict[str, Any]:
    files = trace_files(target)
    if not files:
        raise SystemExit("%s: no .json or .json.gz files" % target)
    size = sum(uncompressed_size(p) for p in files)
    disk = sum(os.path.getsize(p) for p in files)
    label = os.path.basename(os.path.normpath(target))
    row: Dict[str, Any] = {"input": label, "files": len(files), "bytes": size, "disk_bytes": disk,
                           "gzip": any(p.endswith(".gz") for p in files)}
    explain_json = os.path.join(keep, label + ".explain.json")
    argv = [args.vxperf, "explain", "--json", target]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    runs = []
    for _ in range(args.repeats):
        with open(explain_json, "w") as out:
            wall, cpu, rss, rc, err, _ = run_measured(argv, out)
        if rc != 0:
            raise SystemExit("vxperf explain exited %d on %s: %s" % (rc, target, err[-2000:]))
        if err.strip():
            row["vxperf_stderr"] = err[-2000:]
        runs.append((wall, cpu, rss))
        print("vxperf %s: %.2f s wall, %.2f s CPU, %.0f MB peak RSS" % (label, wall, cpu, rss / MB),
              file=sys.stderr, flush=True)
    wall, cpu, rss = min(runs)
    row.update(vxperf_s=wall, vxperf_cpu_s=cpu, vxperf_rss_mb=max(r[2] for r in runs) / MB,
               vxperf_runs=[r[0] for r in runs])
    row["vxperf_rss_fraction"] = max(r[2] for r in runs) / size
    if not args.hta_python:
        return row
    hta_json = os.path.join(keep, label + ".hta.json")
    with open(hta_json, "w") as out:
        wall, cpu, rss, rc, err, timed_out = run_measured(
            [args.hta_python, os.path.join(HERE, "hta_numbers.py"), target], out,
            limit=args.hta_timeout, max_gb=args.hta_max_gb)
    print("HTA %s: %.1f s wall, %.1f s CPU, %.0f MB peak RSS, exit %d%s" % (
        label, wall, cpu, rss / MB, rc, " (stopped at the time limit)" if timed_out else ""),
        file=sys.stderr, flush=True)
    row.update(hta_wall_s=wall, hta_cpu_s=cpu, hta_rss_mb=rss / MB, hta_rc=rc,
               hta_timed_out=timed_out)
    if rc != 0:
        row["hta_error"] = err.strip().splitlines()[-1] if err.strip() else "exit %d" % rc
        return row
    with open(hta_json) as f:
        hta = json.load(f)
    row["hta_s"] = hta.get("hta_seconds")
    row["hta_errors"] = hta.get("hta_errors")
    cmp = subprocess.run([sys.executable, os.path.join(HERE, "explain_vs_hta.py"), hta_json,
                          explain_json], capture_output=True, text=True)
    lines = cmp.stdout.strip().splitlines()
    row["agree"] = cmp.returncode == 0
    row["compare"] = lines[-1] if lines else cmp.stderr.strip()
    row["differences"] = lines[:-1][:20]
    return row


def table(rows: List[Dict[str, Any]]) -> str:
    out = ["| input | files | size (uncompressed) | vxperf explain | vxperf peak RSS | HTA 0.6.1 |"
           " HTA peak RSS | HTA / vxperf time | numbers |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        size = "%.0f MB" % (r["bytes"] / MB)
        if r["gzip"]:
            size += " (%.0f MB gzip)" % (r["disk_bytes"] / MB)
        vx = "%.2f s (CPU %.2f s)" % (r["vxperf_s"], r["vxperf_cpu_s"])
        vrss = "%.0f MB (1/%.1f of the input)" % (r["vxperf_rss_mb"], 1 / r["vxperf_rss_fraction"])
        if "hta_wall_s" not in r:
            hta = hrss = ratio = numbers = "not run"
        elif r.get("hta_timed_out"):
            hta = "> %.0f s (stopped)" % r["hta_wall_s"]
            hrss = "> %.0f MB" % r["hta_rss_mb"]
            ratio = "> %.0fx" % (r["hta_wall_s"] / r["vxperf_s"])
            numbers = "not compared"
        elif "hta_error" in r:
            hta = "failed after %.0f s: %s" % (r["hta_wall_s"], r["hta_error"][:120])
            hrss = "%.0f MB" % r["hta_rss_mb"]
            ratio = "> %.0fx" % (r["hta_wall_s"] / r["vxperf_s"])
            numbers = "not compared"
        else:
            hta = "%.1f s (its own clock: %.1f s)" % (r["hta_wall_s"], r["hta_s"] or 0)
            hrss = "%.0f MB" % r["hta_rss_mb"]
            ratio = "%.0fx (own clock %.0fx)" % (r["hta_wall_s"] / r["vxperf_s"],
                                                 (r["hta_s"] or 0) / r["vxperf_s"])
            numbers = ("agree: " if r["agree"] else "DIFFER: ") + r["compare"]
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["input"], r["files"], size, vx, vrss, hta, hrss, ratio, numbers))
    return "\n".join(out)


def cmd_run(args: argparse.Namespace) -> None:
    keep = args.keep_json or tempfile.mkdtemp(prefix="vxperf-explain-bench-")
    os.makedirs(keep, exist_ok=True)
    rows = []
    for target in args.targets:
        row = run_one(target, args, keep)
        print("measured: %s" % json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    mk = sub.add_parser("make", help="write big traces from a real one")
    mk.add_argument("sources", nargs="+", help="real Kineto trace files (.json or .json.gz)")
    mk.add_argument("--out", required=True,
                    help="the file to write, or with --ranks the directory")
    mk.add_argument("--size-mb", type=float, default=1024.0,
                    help="uncompressed size of each file in MiB (default 1024)")
    mk.add_argument("--ranks", type=int, default=0,
                    help="write this many rank files into the directory --out")
    mk.add_argument("--gzip", action="store_true", help="write .json.gz")
    mk.add_argument("--whole", action="store_true",
                    help="repeat the whole event list even when the source has profiler steps")
    rn = sub.add_parser("run", help="time vxperf explain (and HTA) on trace directories")
    rn.add_argument("targets", nargs="+", help="trace directories (or files)")
    rn.add_argument("--vxperf", required=True)
    rn.add_argument("--threads", type=int, default=0, help="vxperf's --threads (default: its own)")
    rn.add_argument("--repeats", type=int, default=3, help="runs of vxperf (default 3)")
    rn.add_argument("--hta-python", default=None,
                    help="python of a venv with HTA 0.6.1 installed (HTA is skipped without it)")
    rn.add_argument("--hta-timeout", type=float, default=1500.0,
                    help="stop HTA after this many seconds (default 1500)")
    rn.add_argument("--hta-max-gb", type=float, default=None,
                    help="HTA's address-space limit in GB (ulimit -v; default none)")
    rn.add_argument("--keep-json", default=None, help="folder for both JSON outputs")
    rn.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    if args.step == "make":
        cmd_make(args)
    else:
        cmd_run(args)


if __name__ == "__main__":
    main()
