"""Oracle: Holistic Trace Analysis (HTA) numbers for one Kineto trace directory, as JSON.

Bench tool only -- never a dependency of vxperf. It imports ``hta`` (HolisticTraceAnalysis
0.6.1, commit f4d0062c), so it runs only inside a virtual environment where HTA is installed:

    /path/to/hta-venv/bin/python bench/hta_numbers.py TRACE_DIR > out.json

The JSON has the layout that ``vxperf explain --json`` prints (see
bench/explain_vs_hta.py, which compares the two). Every analysis is run the way HTA's
``TraceAnalysis`` runs it by default (``include_last_profiler_step=False``, default
arguments), except that the analyses whose public API defaults to rank 0 are run for every
rank. The definitions behind each number are in the project's reference note
``hta_definitions.md``:

* ``steps``: ``extract_iteration_info`` (what ``get_profiler_steps`` uses), per rank.
* ``temporal``: ``get_temporal_breakdown``.
* ``idle_by_stream``: ``get_idle_time_breakdown`` for each rank.
* ``comm_comp_overlap_pct``: ``get_comm_comp_overlap``.
* ``kernel_types`` / ``kernel_types_pct`` (top level) and ``kernels`` (per rank):
  ``get_gpu_kernel_breakdown``. The per-rank ``kernel_types`` come from HTA's own
  ``BreakdownAnalysis._get_gpu_kernel_type_time`` applied to one rank's GPU rows exactly as
  ``get_gpu_kernel_breakdown`` prepares them; their sum over ranks is checked against the
  public frame.
* ``launches``: ``get_cuda_kernel_launch_stats(ranks=[rank])``, counted with the default
  cutoffs (runtime 50 us, launch delay 100 us) as HTA's plots select them.

With ``--critical-path[=SPEC]`` (SPEC as ``vxperf explain --critical-path=SPEC`` takes it:
``ANNOTATION``, ``ANNOTATION:K`` or ``ANNOTATION:A-B``; default ``ProfilerStep``, each instance;
an empty ANNOTATION is the whole trace), each rank also gets ``critical_path``:
``CriticalPathAnalysis.critical_path_analysis(t, rank, annotation, instance_id)`` on the loaded
trace, then ``summary()`` and ``get_critical_path_breakdown()`` on the graph, in the layout
``vxperf explain --json --critical-path`` prints (docs/EXPLAIN.md): per instance what HTA returns
(``hta``: ok, None, raises, False), the annotation row selected, the window, the path length
(networkx's, with the graph weights), the summary's total, the breakdown by bound type, the path
edges by type and the ten events that cost most. HTA's environment switches are left at their
defaults. ``--stable-sorts`` runs HTA with pandas' single-column sorts made stable: the order of
equal times that vxperf takes (HTA's own depends on the CPU: numpy's quicksort).

Numbers are printed as integers where HTA's value is integral, NaN becomes null. An analysis
that raises is left out and its error is listed under ``"hta_errors"``. ``"hta_seconds"`` is the
wall time of loading plus all analyses, ``"hta_peak_rss_mb"`` the process's peak RSS.
All of HTA's own output (logging, prints) goes to stderr; stdout carries only the JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import os
import resource
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

JSONValue = Any
RUNTIME_CUTOFF = 50
LAUNCH_DELAY_CUTOFF = 100
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")
# Our key: HTA's column, in get_temporal_breakdown's frame and get_gpu_kernel_breakdown's
# per-kernel frame (read through nums()).
TEMPORAL_COLUMNS = {
    "kernel_time_us": "kernel_time(us)",
    "idle_time_us": "idle_time(us)",
    "compute_time_us": "compute_time(us)",
    "non_compute_time_us": "non_compute_time(us)",
    "idle_pct": "idle_time_pctg",
    "compute_pct": "compute_time_pctg",
    "non_compute_pct": "non_compute_time_pctg",
}
KERNEL_COLUMNS = {"sum_us": "sum (us)", "max_us": "max (us)", "min_us": "min (us)",
                  "mean_us": "mean (us)"}


def num(value: Any) -> Optional[int | float]:
    """Convert a pandas/numpy scalar to int (when integral), float, or None (NaN)."""
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"not a number: {value!r}") from exc
    if math.isnan(f):
        return None
    if math.isinf(f):
        return f
    if f.is_integer():
        return int(f)
    return f


def nums(row: Any, columns: Dict[str, str]) -> Dict[str, JSONValue]:
    """{key: num(row[column])} for each key: column of `columns`, in that order."""
    return {key: num(row[column]) for key, column in columns.items()}


def _guard(errors: Dict[str, str], key: str, fn: Callable[[], Any]) -> Any:
    """Run one analysis; on failure record the error and return None."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - an oracle reports whatever HTA raises
        errors[key] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
        return None


def make_sorts_stable() -> None:
    """Make pandas' sort_values stable unless a kind is named: HTA's single-column sorts use the
    default quicksort, whose order of equal keys depends on the CPU (numpy's SIMD sort), so HTA
    can order two kernels starting in the same microsecond either way (the reference note's Q9).
    The stable order is the canonical one vxperf implements."""
    import pandas as pd

    original = pd.DataFrame.sort_values

    def stable(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("kind", "stable")
        return original(self, *args, **kwargs)

    pd.DataFrame.sort_values = stable  # type: ignore[method-assign]


NO_QUEUE: set = set()  # ranks allow_no_queue() let go on


def allow_no_queue() -> None:
    """Let HTA's critical path go on where a rank has no queue-length series (no launch with a
    GPU row: a CPU-only profile), where it stops with an AssertionError: the series is then
    empty and the path is the host's alone, which is what vxperf gives after saying that HTA
    stops there. The instance is still reported as HTA reports it ("raises"), with the numbers
    the patched HTA gives, so that those can be compared."""
    import pandas as pd
    from hta.analyzers.trace_counters import TraceCounters

    original = TraceCounters._get_queue_length_time_series_for_rank.__func__

    def series(cls: Any, t: Any, rank: int) -> Any:
        q = original(cls, t, rank)
        if q is None:
            NO_QUEUE.add(rank)
            q = pd.DataFrame({"ts": [], "pid": [], "tid": [], "stream": [], "queue_length": []})
        return q

    TraceCounters._get_queue_length_time_series_for_rank = classmethod(series)


def parse_critical_path_spec(spec: str) -> Tuple[str, Optional[Tuple[int, int]]]:
    """ANNOTATION[:K|:A-B] -> (annotation, None for each instance or (first, last))."""
    head, sep, tail = spec.rpartition(":")
    if sep:
        first, dash, last = tail.partition("-")
        if first.isdigit() and (not dash or last.isdigit()):
            return head, (int(first), int(last) if dash else int(first))
    return spec, None


MAX_INSTANCES = 1000


def critical_path(trace: Any, rank: int, spec: str) -> Dict[str, JSONValue]:
    """HTA's critical path of each instance SPEC names, on one rank."""
    from hta.analyzers.critical_path_analysis import CriticalPathAnalysis
    from hta.configs.config import logger as hta_logger

    hta_logger.setLevel(logging.ERROR)  # a warning per GPU op without an edge costs minutes
    annotation, chosen = parse_critical_path_spec(spec)
    sym_index = trace.symbol_table.get_sym_id_map()
    sym_table = trace.symbol_table.get_sym_table()
    trace_df = trace.get_trace(rank)
    ids = [v for k, v in sym_index.items() if annotation in k]
    rows = trace_df[trace_df["name"].isin(ids)]
    if annotation == "":
        asked = [(0, 0)]
    elif chosen is None:
        asked = [(i, i) for i in range(max(1, min(len(rows), MAX_INSTANCES)))]
    else:
        asked = [chosen]
    instances = []
    for first, last in asked:
        entry: Dict[str, JSONValue] = {"instance": [first, last]}
        if annotation != "":
            selected = rows.iloc[first:last + 1]
            if len(selected) > 0:
                entry["row"] = sym_table[int(selected["name"].iloc[0])]
                entry["category"] = sym_table[int(selected["cat"].iloc[0])]
                begin = selected["ts"].min()
                end = (selected["ts"] + selected["dur"]).max()
                entry["window_us"] = [num(begin + trace.min_ts), num(end + trace.min_ts)]
        instance_id: Any = first if first == last else (first, last)
        try:
            result = CriticalPathAnalysis.critical_path_analysis(trace, rank, annotation,
                                                                  instance_id)
            if result is None:
                entry["hta"] = "None"
            elif not result[1]:
                entry["hta"] = "False"
            else:
                entry.update(critical_path_numbers(result[0], trace_df, sym_table))
                entry["hta"] = "ok"
                if rank in NO_QUEUE:  # allow_no_queue(): HTA itself stops here
                    entry["hta"] = "raises"
                    entry["why"] = ("AssertionError: Queue length time series is required for "
                                    "kernel graph construction")
        except Exception as exc:  # noqa: BLE001 - an oracle reports whatever HTA raises
            entry["hta"] = "raises"
            entry["why"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            traceback.print_exc(file=sys.stderr)
        instances.append(entry)
    return {"annotation": annotation, "sync_events": "cuda_sync" in sym_index,
            "instances": instances}


def critical_path_numbers(graph: Any, trace_df: Any, sym_table: List[str]) -> Dict[str, JSONValue]:
    """The numbers of one instance's path, from HTA's graph."""
    nodes = graph.critical_path_nodes
    length = 0
    for u, v in zip(nodes, nodes[1:]):
        length += graph.edges[u, v]["weight"]
    summary = graph.summary()
    edf = graph.get_critical_path_breakdown()
    sums = edf.groupby("bound_by").duration.sum()
    breakdown = {str(k): {"us": num(sums[k]), "pct": num(summary[k])} for k in sums.index}
    edges = {str(k): int(n) for k, n in edf["type"].value_counts().items()}
    top: List[Dict[str, JSONValue]] = []
    attributed = edf[edf["event_idx"].notna()]
    groups: Dict[Tuple[int, str], List[Any]] = {}
    for row in attributed.itertuples():
        key = (int(row.event_idx), str(row.bound_by))
        groups.setdefault(key, []).append(row.duration)
    for (idx, bound), durations in groups.items():
        top.append({"index": idx, "name": sym_table[int(trace_df["name"].loc[idx])],
                    "bound_by": bound, "us": num(sum(durations)), "edges": len(durations)})
    top.sort(key=lambda e: (-e["us"], e["index"], e["bound_by"]))
    return {"length_us": num(length), "summary_total_us": num(edf["duration"].sum()),
            "path_nodes": len(nodes), "breakdown": breakdown, "edges": edges,
            "top_events": top[:10]}


def run(trace_dir: str, critical_path_spec: Optional[str] = None,
        only_critical_path: bool = False) -> Dict[str, JSONValue]:
    """Load TRACE_DIR with HTA, run the analyses and return the JSON-ready dict."""
    import pandas as pd

    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.analyzers.straggler import extract_iteration_info
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import KernelType, get_kernel_type

    errors: Dict[str, str] = {}
    start = time.perf_counter()
    analyzer = TraceAnalysis(trace_dir=trace_dir)
    trace = analyzer.t
    ranks: List[int] = sorted(int(r) for r in trace.get_all_traces().keys())
    per_rank: Dict[int, Dict[str, JSONValue]] = {r: {"rank": r} for r in ranks}

    if only_critical_path:
        for r in ranks:
            spec = "ProfilerStep" if critical_path_spec is None else critical_path_spec
            per_rank[r]["critical_path"] = critical_path(trace, r, spec)
        return {"ranks": [per_rank[r] for r in ranks],
                "hta_seconds": round(time.perf_counter() - start, 3),
                "hta_peak_rss_mb": round(
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}

    # Profiler steps, per rank (get_profiler_steps is the sorted union of these).
    iters = _guard(errors, "steps", lambda: extract_iteration_info(trace))
    if iters is not None:
        for r in ranks:
            sel = iters[(iters["rank"] == r) & (iters["iter"] != -1)]["iter"]
            per_rank[r]["steps"] = sorted(int(i) for i in sel.unique())

    # Temporal breakdown.
    temporal = _guard(
        errors, "temporal", lambda: analyzer.get_temporal_breakdown(visualize=False)
    )
    if temporal is not None:
        for _, row in temporal.iterrows():
            per_rank[int(row["rank"])]["temporal"] = nums(row, TEMPORAL_COLUMNS)

    # Idle-time breakdown per stream. TraceAnalysis.get_idle_time_breakdown(ranks=all) only
    # loops over the ranks and concatenates, so one call per rank gives the same frame while
    # keeping one failing rank from hiding the others.
    def idle_frame(rank: int) -> Any:
        return analyzer.get_idle_time_breakdown(ranks=[rank], visualize=False)[0]

    def launch_frame(rank: int) -> Any:
        return analyzer.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]

    for r in ranks:
        idle = _guard(errors, f"idle_by_stream[rank {r}]", functools.partial(idle_frame, r))
        if idle is None:
            continue
        streams: List[Dict[str, JSONValue]] = []
        for stream in sorted(int(s) for s in idle["stream"].unique()):
            rows = idle[idle["stream"] == stream]
            by_cat = {str(c): row for c, row in zip(rows["idle_category"], rows.itertuples())}
            ratios_nan = bool(rows["idle_time_ratio"].isna().all())
            entry: Dict[str, JSONValue] = {"stream": stream}
            for cat in IDLE_CATEGORIES:
                entry[f"{cat}_us"] = num(by_cat[cat].idle_time) if cat in by_cat else 0
            for cat in IDLE_CATEGORIES:
                if cat in by_cat:
                    entry[f"{cat}_ratio"] = num(by_cat[cat].idle_time_ratio)
                else:
                    entry[f"{cat}_ratio"] = None if ratios_nan else 0
            unknown = set(by_cat) - set(IDLE_CATEGORIES)
            if unknown:
                errors[f"idle_by_stream[rank {r}]"] = f"unknown categories {sorted(unknown)}"
            streams.append(entry)
        per_rank[r]["idle_by_stream"] = streams

    # Communication/computation overlap.
    overlap = _guard(
        errors, "comm_comp_overlap", lambda: analyzer.get_comm_comp_overlap(visualize=False)
    )
    if overlap is not None:
        for _, row in overlap.iterrows():
            per_rank[int(row["rank"])]["comm_comp_overlap_pct"] = num(
                row["comp_comm_overlap_pctg"]
            )

    # GPU kernel breakdown (public frames).
    top: Dict[str, JSONValue] = {}
    breakdown = _guard(
        errors, "gpu_kernel_breakdown", lambda: analyzer.get_gpu_kernel_breakdown(visualize=False)
    )
    if breakdown is not None:
        kernel_type_df, kernel_df = breakdown
        nonzero = kernel_type_df[kernel_type_df["sum"] != 0]
        top["kernel_types"] = {str(k): num(s) for k, s in zip(nonzero["kernel_type"], nonzero["sum"])}
        top["kernel_types_pct"] = {
            str(k): num(p) for k, p in zip(nonzero["kernel_type"], nonzero["percentage"])
        }
        for r in ranks:
            rows = kernel_df[kernel_df["rank"] == r]
            per_rank[r]["kernels"] = [
                {
                    "name": str(row["name"]),
                    "type": str(row["kernel_type"]),
                    **nums(row, KERNEL_COLUMNS),
                    "std_us": num(row["stddev"]) if not pd.isna(row["stddev"]) else 0,
                }
                for _, row in rows.iterrows()
            ]

    # Per-rank kernel-type segments: the same computation get_gpu_kernel_breakdown does for
    # each rank before it sums over ranks (breakdown_analysis.py, include_memory_kernels=True).
    def kernel_types_per_rank() -> Dict[int, Dict[str, int | float | None]]:
        sym_table = trace.symbol_table.get_sym_table()
        types = [KernelType.COMPUTATION.name, KernelType.COMMUNICATION.name, KernelType.MEMORY.name]
        out: Dict[int, Dict[str, int | float | None]] = {}
        for r, trace_df in trace.get_all_traces().items():
            gpu = trace_df[trace_df["stream"].ne(-1)].copy()
            gpu["kernel_type"] = gpu[["name"]].apply(
                lambda x: get_kernel_type(sym_table[x["name"]]), axis=1
            )
            gpu["name"] = gpu["name"].apply(lambda x: sym_table[x])
            frame = BreakdownAnalysis._get_gpu_kernel_type_time(gpu, types)
            out[int(r)] = {
                str(k): num(s) for k, s in zip(frame["kernel_type"], frame["sum"]) if s != 0
            }
        return out

    kt_rank = _guard(errors, "kernel_types_per_rank", kernel_types_per_rank)
    if kt_rank is not None:
        for r, d in kt_rank.items():
            per_rank[r]["kernel_types"] = d
        if "kernel_types" in top:
            summed: Dict[str, float] = {}
            for d in kt_rank.values():
                for k, v in d.items():
                    summed[k] = summed.get(k, 0) + (v or 0)
            if summed != top["kernel_types"]:
                errors["kernel_types_per_rank"] = (
                    f"per-rank sums {summed} differ from HTA's frame {top['kernel_types']}"
                )

    # Kernel launch statistics, one rank at a time.
    for r in ranks:
        launch = _guard(errors, f"launches[rank {r}]", functools.partial(launch_frame, r))
        if launch is None:
            continue
        cpu = launch["cpu_duration"]
        gpu = launch["gpu_duration"]
        per_rank[r]["launches"] = {
            "n_events": int(len(launch)),
            "n_long_runtime": int((cpu > RUNTIME_CUTOFF).sum()),
            "n_long_launch_delay": int((launch["launch_delay"] > LAUNCH_DELAY_CUTOFF).sum()),
            "n_short_gpu": int(((cpu <= RUNTIME_CUTOFF) & (gpu < cpu)).sum()),
        }

    if critical_path_spec is not None:
        for r in ranks:
            per_rank[r]["critical_path"] = critical_path(trace, r, critical_path_spec)

    seconds = time.perf_counter() - start
    result: Dict[str, JSONValue] = {"ranks": [per_rank[r] for r in ranks]}
    result.update(top)
    result["hta_seconds"] = round(seconds, 3)
    result["hta_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if errors:
        result["hta_errors"] = errors
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace_dir", help="directory with one Kineto trace file per rank")
    parser.add_argument("--critical-path", nargs="?", const="ProfilerStep", default=None,
                        metavar="SPEC", help="also HTA's critical path (ANNOTATION[:K|:A-B])")
    parser.add_argument("--only-critical-path", action="store_true",
                        help="skip the other analyses (faster on big traces)")
    parser.add_argument("--stable-sorts", action="store_true",
                        help="run HTA with pandas' sorts stable (the canonical order of ties)")
    parser.add_argument("--host-path-without-queue", action="store_true",
                        help="let the critical path go on where HTA stops for want of a "
                             "queue-length series (a CPU-only profile), to check vxperf's host path")
    args = parser.parse_args(argv)
    if args.host_path_without_queue:
        allow_no_queue()
    if args.stable_sorts:
        make_sorts_stable()
    if not os.path.isdir(args.trace_dir):
        parser.error(f"not a directory: {args.trace_dir}")

    # HTA logs and prints to stdout in places; send fd 1 to stderr while it runs and keep the
    # real stdout for the JSON.
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        result = run(args.trace_dir, args.critical_path, args.only_critical_path)
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)
    json.dump(result, sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
