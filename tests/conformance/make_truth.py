#!/usr/bin/python3
"""Where the reference is wrong: the expected output of a case, corrected to the truth.

Usage: make_truth.py CASES_DIR [--check]

The reference prices every micro-step of an accumulated step at the first micro-step's length;
vxperf prices each forward at its own (README, "Differences from the reference"). For each case
whose steps mix lengths, this writes CASE.truth.jsonl and CASE.truth.log: the reference's expected
records and log with each training window's priced fields recomputed from the script's own
forwards and the cost model's definition (2*P*T + 4*T^2*W_self + 4*T*T_text*W_cross per sample),
everything else as the reference wrote it. The conformance tests compare with a case's truth
files where it has them. With --check, nothing is written: the exit status is 1 when a truth file
is missing, stale or left over.
"""

import glob
import json
import os
import re
import sys


def read_truth(script_lines):
    """(forwards by step, the trained model's event): a forward is (tokens, samples, fraction);
    a step closes at the synced optimizer step of the optimizer that closed the first one."""
    steps, model, owner, step = {}, {}, None, 0
    for line in script_lines:
        ev = json.loads(line)
        kind = ev.get("ev")
        if kind == "train_model":
            model = ev
        elif kind == "phase" and ev.get("name") == "fwd" and (ev.get("tokens") or 0) > 0:
            steps.setdefault(step, []).append(
                (float(ev["tokens"]), float(ev.get("samples", 1)), float(ev.get("frac", 1.0))))
        elif kind == "optimizer_step" and ev.get("sync", True):
            by = ev.get("owner", "")
            owner = by if owner is None else owner
            if by == owner:
                step += 1
    return steps, model


def mixed(steps):
    """Whether some step's forwards differ in length."""
    return any(len({tokens for tokens, _, _ in forwards}) > 1 for forwards in steps.values())


def correct_window(steps, model, record):
    """Recomputes a window record's priced fields in place; False when it has none."""
    t = record.get("throughput") or {}
    if record.get("kind") != "train_window" or "flops_per_step" not in t:
        return False
    params = float(t["params"])
    widths = model.get("attn") if t["attn_share"] > 0 else None
    self_width = float(widths["self"]) if widths else 0.0
    cross_width = float(widths["cross"]) if widths else 0.0
    text = float(model.get("text_tokens") or 0)
    # The measured steps: the window's, less the warmup ones at its start.
    first = record["step_first"] + record.get("warmup_excluded", 0)
    linear = attention = 0.0
    lengths = []
    for index in range(first, record["step_last"] + 1):
        forwards = steps.get(index)
        if not forwards:
            continue
        for tokens, samples, fraction in forwards:
            n = samples * fraction
            linear += 2.0 * params * tokens * n
            attention += (4.0 * tokens * tokens * self_width
                          + 4.0 * tokens * text * cross_width) * n
        lengths.append(sum(tokens * samples for tokens, samples, _ in forwards)
                       / sum(samples for _, samples, _ in forwards))
    work = linear + attention
    rate = work * t["dp"] / t["priced_s"] / 1e12
    t["flops_per_step"] = t["flops_coef"] * work / t["priced_steps"]
    t["tflops"] = t["flops_coef"] * rate
    t["hw_tflops"] = t["flops_coef_hw"] * rate
    t["attn_share"] = attention / work if work else 0.0
    t["tokens"] = sum(lengths) / len(lengths)
    if t.get("peak_tflops"):
        t["mfu"] = t["tflops"] / t["peak_tflops"]
        t["hfu"] = t["hw_tflops"] / t["peak_tflops"]
    return True


def _put(line, pattern, value):
    """`line` with the first match of `pattern`'s group replaced by `value`."""
    match = re.search(pattern, line)
    if match is None:
        return line
    return line[:match.start(1)] + value + line[match.end(1):]


def correct_line(line, record):
    """A window's log line with its priced numbers written from the corrected record, in the
    line's own format."""
    t = record["throughput"]
    line = _put(line, r"attn (\d+)%\) [0-9.e+]+ FLOPs/step", f"{t['attn_share'] * 100:.0f}")
    line = _put(line, r"([0-9.e+]+) FLOPs/step", f"{t['flops_per_step']:.2e}")
    line = _put(line, r"-> ([0-9.]+) TFLOPS", f"{t['tflops']:.1f}")
    if t.get("mfu") is not None:
        line = _put(line, r"\(MFU ([0-9.]+)%", f"{t['mfu'] * 100:.1f}")
        line = _put(line, r"/ HFU ([0-9.]+)%", f"{t['hfu'] * 100:.1f}")
    return line


def read_lines(path):
    with open(path) as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


def truth_of(stem):
    """(records text, log text) of a case's truth, or None when the reference is right on it."""
    steps, model = read_truth(read_lines(stem + ".events.jsonl"))
    if not mixed(steps):
        return None
    windows = []
    records = []
    for line in read_lines(stem + ".expected.jsonl"):
        record = json.loads(line)
        if correct_window(steps, model, record):
            windows.append(record)
        records.append(json.dumps(record))
    log = []
    pending = iter(windows)
    for line in read_lines(stem + ".expected.log"):
        if line.startswith("[Perf][rank") and " FLOPs/step -> " in line:
            line = correct_line(line, next(pending))
        log.append(line)
    return "\n".join(records) + "\n", "\n".join(log) + "\n"


def self_test():
    """One step of two micro-steps at one length changes nothing; two lengths, each its own."""
    script = [json.dumps(e) for e in (
        {"ev": "train_model", "params": 1000, "attn": {"self": 10, "cross": 10},
         "text_tokens": 5},
        {"ev": "phase", "name": "fwd", "tokens": 100, "samples": 2},
        {"ev": "optimizer_step", "owner": "a", "sync": False},
        {"ev": "phase", "name": "fwd", "tokens": 50, "samples": 1},
        {"ev": "optimizer_step", "owner": "a", "sync": True})]
    steps, model = read_truth(script)
    assert mixed(steps) and steps == {0: [(100.0, 2.0, 1.0), (50.0, 1.0, 1.0)]}
    record = {"kind": "train_window", "step_first": 0, "step_last": 0, "throughput": {
        "params": 1000, "attn_share": 0.5, "priced_steps": 1, "dp": 1, "priced_s": 2.0,
        "flops_coef": 3.0, "flops_coef_hw": 4.0, "flops_per_step": 0, "tflops": 0,
        "hw_tflops": 0, "tokens": 0, "peak_tflops": 10.0}}
    assert correct_window(steps, model, record)
    long = 2.0 * 1000 * 100 + 4.0 * 100 * 100 * 10 + 4.0 * 100 * 5 * 10
    short = 2.0 * 1000 * 50 + 4.0 * 50 * 50 * 10 + 4.0 * 50 * 5 * 10
    t = record["throughput"]
    assert abs(t["flops_per_step"] - 3.0 * (2 * long + short)) < 1e-6
    assert t["tokens"] == (2 * 100 + 50) / 3
    line = ("DiT 0.0B params (x, attn 50%) 1.00e+00 FLOPs/step -> 1.0 TFLOPS "
            "(MFU 1.0% / HFU 1.0% @10)")
    assert correct_line(line, record) == (
        "DiT 0.0B params (x, attn 66%) 4.35e+06 FLOPs/step -> 0.0 TFLOPS "
        "(MFU 0.0% / HFU 0.0% @10)"), correct_line(line, record)


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--check"):
        sys.exit(__doc__)
    self_test()
    check = len(sys.argv) == 3
    problems = []
    for script in sorted(glob.glob(os.path.join(sys.argv[1], "*.events.jsonl"))):
        stem = script[:-len(".events.jsonl")]
        truth = truth_of(stem)
        for suffix, text in zip((".truth.jsonl", ".truth.log"), truth or (None, None)):
            path = stem + suffix
            held = open(path).read() if os.path.exists(path) else None
            if held == text:
                continue
            if check:
                problems.append(f"{os.path.basename(path)}: "
                                f"{'stale' if held and text else 'missing' if text else 'left over'}")
            elif text is None:
                os.remove(path)
            else:
                with open(path, "w") as handle:
                    handle.write(text)
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
