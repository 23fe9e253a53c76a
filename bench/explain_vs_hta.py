#!/usr/bin/env python3
"""Compare ``vxperf explain --json`` output with the HTA oracle (bench/hta_numbers.py).

Usage::

    python3 bench/explain_vs_hta.py HTA_JSON EXPLAIN_JSON

Standard library only. Both files use the layout printed by bench/hta_numbers.py::

    {"ranks": [{"rank": R, "steps": [...], "temporal": {...}, "idle_by_stream": [...],
                "comm_comp_overlap_pct": x|null, "kernel_types": {...}, "kernels": [...],
                "launches": {...}}, ...],
     "kernel_types": {...}, "kernel_types_pct": {...}}

Rules:

* Only what the HTA side has is compared: a key absent there (an analysis HTA could not run,
  or per-rank ``kernel_types`` when HTA gave none) is skipped, and the EXPLAIN side may carry
  extra keys ("count", "file", "waterfall", "errors", ...). Ranks that only EXPLAIN lists are
  skipped (HTA drops ranks without analyzable events).
* Inside a compared table, rows are matched by key and a row on only one side is a
  difference: streams in ``idle_by_stream``, (type, name) in ``kernels``, labels in
  ``kernel_types`` (an EXPLAIN-only label counts only when its value is non-zero, because
  HTA's oracle drops zero rows).
* Microsecond sums and counts: equal (integers exactly, otherwise abs tol 1e-6).
  Percentages and ratios (``*_pct``, ``*_ratio``, ``kernel_types_pct``): abs tol 1e-9.
  ``mean_us`` / ``std_us``: rel tol 1e-9. ``steps``: the whole list must be equal.
  ``null`` equals only ``null``.

``critical_path`` (with ``--critical-path`` on both sides): instances matched by
``[first, last]``; what HTA returns (``hta``: the kind, not the message), the annotation row and
window selected, and where HTA gives a path: ``length_us``, ``summary_total_us``, ``path_nodes``,
each bound type's ``us`` and ``pct``, the edges by type, the top events in order (index, name,
bound type, us, edges).

Each difference is printed as ``rank R: path: hta=X explain=Y`` (``rank *`` for the totals
over all ranks), then a final line ``N differences in M compared values``. Exit status: 0 when
there is no difference, 1 when there is one, 2 on a usage or input error.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Dict, List, Optional, Tuple

ABS_TOL_US = 1e-6
ABS_TOL_PCT = 1e-9
REL_TOL_STATS = 1e-9
MISSING: str = "<missing>"


class Comparison:
    """Accumulates compared values and differences."""

    def __init__(self) -> None:
        self.compared = 0
        self.lines: List[str] = []

    def diff(self, rank: str, path: str, hta: Any, explain: Any) -> None:
        self.lines.append(f"rank {rank}: {path}: hta={fmt(hta)} explain={fmt(explain)}")

    def unmatched(self, rank: str, path: str, hta: Any, explain: Any) -> None:
        """Something one side has and the other lacks: compared, and a difference."""
        self.compared += 1
        self.diff(rank, path, hta, explain)

    def value(self, rank: str, path: str, hta: Any, explain: Any, kind: str) -> None:
        """Compare one scalar; kind is 'us', 'pct' or 'stat'."""
        self.compared += 1
        if not equal(hta, explain, kind):
            self.diff(rank, path, hta, explain)


def fmt(v: Any) -> str:
    text: str = MISSING if v is MISSING else json.dumps(v)
    return text


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def equal(hta: Any, explain: Any, kind: str) -> bool:
    if hta is None or explain is None or explain is MISSING:
        return hta is None and explain is None
    if not (is_num(hta) and is_num(explain)):
        return bool(hta == explain)
    if isinstance(hta, int) and isinstance(explain, int):
        return hta == explain
    a, b = float(hta), float(explain)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if kind == "pct":
        return abs(a - b) <= ABS_TOL_PCT
    if kind == "stat":
        return math.isclose(a, b, rel_tol=REL_TOL_STATS, abs_tol=1e-12)
    return abs(a - b) <= ABS_TOL_US


def kind_of(key: str) -> str:
    if key.endswith("_pct") or key.endswith("_ratio"):
        return "pct"
    if key in ("mean_us", "std_us"):
        return "stat"
    return "us"


def compare_flat(c: Comparison, rank: str, path: str, hta: Dict[str, Any], exp: Any) -> None:
    """Compare every key of a flat dict of numbers present on the HTA side."""
    if not isinstance(exp, dict):
        exp = {}
    for key, hv in hta.items():
        c.value(rank, f"{path}.{key}", hv, exp.get(key, MISSING), kind_of(key))


def compare_labels(
    c: Comparison, rank: str, path: str, hta: Dict[str, Any], exp: Any, kind: str
) -> None:
    """Compare a label -> number dict; EXPLAIN-only labels count when non-zero."""
    if not isinstance(exp, dict):
        exp = {}
    for label, hv in hta.items():
        c.value(rank, f"{path}[{label}]", hv, exp.get(label, MISSING), kind)
    for label, ev in exp.items():
        if label in hta:
            continue
        if is_num(ev) and ev == 0:
            continue
        c.unmatched(rank, f"{path}[{label}]", MISSING, ev)


def compare_rows(
    c: Comparison,
    rank: str,
    path: str,
    hta: List[Dict[str, Any]],
    exp: Any,
    key_fields: Tuple[str, ...],
) -> None:
    """Match table rows by key_fields and compare the other fields of the HTA rows."""

    def index(rows: Any) -> Dict[Tuple[Any, ...], Dict[str, Any]]:
        out: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
        if isinstance(rows, list):
            for row in rows:
                if isinstance(row, dict):
                    out[tuple(row.get(k) for k in key_fields)] = row
        return out

    hrows, erows = index(hta), index(exp)
    for key, hrow in hrows.items():
        label = f"{path}[{'/'.join(str(k) for k in key)}]"
        erow = erows.get(key)
        if erow is None:
            c.unmatched(rank, label, "<row>", MISSING)
            continue
        for field, hv in hrow.items():
            if field in key_fields:
                continue
            c.value(rank, f"{label}.{field}", hv, erow.get(field, MISSING), kind_of(field))
    for key in erows:
        if key not in hrows:
            c.unmatched(rank, f"{path}[{'/'.join(str(k) for k in key)}]", MISSING, "<row>")


def compare_critical_path(c: Comparison, rank: str, hta: Dict[str, Any], exp: Any) -> None:
    """Match instances by [first, last]; compare what HTA returns, the row and window selected,
    and, where HTA gives a path, its numbers (the path's length, the summary's total and
    breakdown, the edges by type, the top events in order)."""
    if not isinstance(exp, dict):
        exp = {}
    c.value(rank, "critical_path.annotation", hta.get("annotation"), exp.get("annotation"), "us")
    by_instance = {tuple(i.get("instance", [])): i for i in exp.get("instances", []) or []
                   if isinstance(i, dict)}
    for hi in hta.get("instances", []):
        key = tuple(hi.get("instance", []))
        path = f"critical_path[{'-'.join(str(k) for k in key)}]"
        ei = by_instance.get(key)
        if ei is None:
            c.unmatched(rank, path, "<instance>", MISSING)
            continue
        c.value(rank, f"{path}.hta", hi.get("hta"), ei.get("hta", MISSING), "us")
        for field in ("row", "category"):
            if field in hi:
                c.value(rank, f"{path}.{field}", hi[field], ei.get(field, MISSING), "us")
        if "window_us" in hi:
            c.compared += 1
            if hi["window_us"] != ei.get("window_us", MISSING):
                c.diff(rank, f"{path}.window_us", hi["window_us"], ei.get("window_us", MISSING))
        if "length_us" not in hi:  # HTA gave no path (with --host-path-without-queue: a host
            continue               # path past its assertion, compared like the others)
        for field in ("length_us", "summary_total_us", "path_nodes"):
            c.value(rank, f"{path}.{field}", hi.get(field), ei.get(field, MISSING), "us")
        hb, eb = hi.get("breakdown", {}), ei.get("breakdown", {}) or {}
        for label in sorted(set(hb) | set(eb)):
            hv, ev = hb.get(label, {}), eb.get(label)
            if ev is None or not hv:
                c.unmatched(rank, f"{path}.breakdown[{label}]", hv or MISSING, ev or MISSING)
                continue
            c.value(rank, f"{path}.breakdown[{label}].us", hv.get("us"), ev.get("us"), "us")
            c.value(rank, f"{path}.breakdown[{label}].pct", hv.get("pct"), ev.get("pct"), "pct")
        compare_labels(c, rank, f"{path}.edges", hi.get("edges", {}), ei.get("edges"), "us")
        htop, etop = hi.get("top_events", []), ei.get("top_events", []) or []
        c.value(rank, f"{path}.top_events.count", len(htop), len(etop), "us")
        for n, (he, ee) in enumerate(zip(htop, etop)):
            for field in ("index", "name", "bound_by", "us", "edges"):
                c.value(rank, f"{path}.top_events[{n}].{field}", he.get(field),
                        ee.get(field, MISSING), "us")


def compare_rank(c: Comparison, hrank: Dict[str, Any], erank: Optional[Dict[str, Any]]) -> None:
    r = str(hrank.get("rank"))
    if erank is None:
        c.unmatched(r, "rank", "<present>", MISSING)
        return
    if "steps" in hrank:
        c.compared += 1
        if hrank["steps"] != erank.get("steps", MISSING):
            c.diff(r, "steps", hrank["steps"], erank.get("steps", MISSING))
    if "temporal" in hrank:
        compare_flat(c, r, "temporal", hrank["temporal"], erank.get("temporal"))
    if "idle_by_stream" in hrank:
        compare_rows(c, r, "idle_by_stream", hrank["idle_by_stream"],
                     erank.get("idle_by_stream"), ("stream",))
    if "comm_comp_overlap_pct" in hrank:
        c.value(r, "comm_comp_overlap_pct", hrank["comm_comp_overlap_pct"],
                erank.get("comm_comp_overlap_pct", MISSING), "pct")
    if "kernel_types" in hrank:
        compare_labels(c, r, "kernel_types", hrank["kernel_types"], erank.get("kernel_types"), "us")
    if "kernels" in hrank:
        compare_rows(c, r, "kernels", hrank["kernels"], erank.get("kernels"), ("type", "name"))
    if "launches" in hrank:
        compare_flat(c, r, "launches", hrank["launches"], erank.get("launches"))
    if "critical_path" in hrank:
        compare_critical_path(c, r, hrank["critical_path"], erank.get("critical_path"))


def compare(hta: Dict[str, Any], explain: Dict[str, Any]) -> Comparison:
    c = Comparison()
    eranks: Dict[Any, Dict[str, Any]] = {}
    for row in explain.get("ranks", []) or []:
        if isinstance(row, dict):
            eranks[row.get("rank")] = row
    for hrank in hta.get("ranks", []):
        compare_rank(c, hrank, eranks.get(hrank.get("rank")))
    if "kernel_types" in hta:
        compare_labels(c, "*", "kernel_types", hta["kernel_types"], explain.get("kernel_types"), "us")
    if "kernel_types_pct" in hta:
        compare_labels(c, "*", "kernel_types_pct", hta["kernel_types_pct"],
                       explain.get("kernel_types_pct"), "pct")
    return c


def load(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level is not an object")
    return data


def main(argv: List[str]) -> int:
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print(f"usage: {argv[0]} HTA_JSON EXPLAIN_JSON", file=sys.stderr)
        return 2
    try:
        hta, explain = load(argv[1]), load(argv[2])
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = compare(hta, explain)
    for line in c.lines:
        print(line)
    print(f"{len(c.lines)} differences in {c.compared} compared values")
    return 1 if c.lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
