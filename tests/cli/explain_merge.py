#!/usr/bin/env python3
"""`vxperf explain` split and merged: `--partial` on each trace alone, then `--merge` on the
partials, prints byte for byte what one run on all the traces prints (text and --json, stdout,
stderr and exit status; the --html page), and a partial that is not one of this version of
explain is an error.

  explain_merge.py VXPERF TRACES BENCH WORK

TRACES: tests/explain/traces (hand-built traces: one with profiler steps, two ranks 0, records
beside them); BENCH: bench/explain_bench.py, which makes a 6-rank set from them (ranks without
profiler steps among ranks with, so that HTA's window of a rank is the job's, not its own).
"""
import json
import os
import shutil
import subprocess
import sys


def run(vxperf, *args):
    p = subprocess.run([vxperf, "explain", *args], capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def partials(vxperf, work, name, traces, options):
    """A partial of each trace alone, in order."""
    out = []
    for i, trace in enumerate(traces):
        path = os.path.join(work, "%s-%d.partial.json" % (name, i))
        rc, stdout, stderr = run(vxperf, trace, "--partial", path, *options)
        assert rc == 0 and stdout == "" and stderr == "", (trace, rc, stdout, stderr)
        out.append(path)
    return out


def check(vxperf, work, name, traces, options=()):
    """One run on every trace against the partials merged; returns the partials' sizes."""
    parts = partials(vxperf, work, name, traces, options)
    for form in ([], ["--json"]):
        one = run(vxperf, *traces, *options, *form)
        merged = run(vxperf, "--merge", *parts, *form)
        if one != merged:
            print("%s %s: one run and the merge differ" % (name, " ".join(form)))
            print("one run (exit %d):\n%s%s" % one)
            print("merged (exit %d):\n%s%s" % merged)
            sys.exit(1)
        assert one[0] in (0, 1), one
    # The page too, and a partial on stdout is the one written to a file.
    pages = [os.path.join(work, "%s-%s.html" % (name, how)) for how in ("one", "merged")]
    run(vxperf, *traces, *options, "--html", pages[0])
    run(vxperf, "--merge", *parts, "--html", pages[1])
    assert all(os.path.exists(p) for p in pages) or not any(os.path.exists(p) for p in pages)
    if os.path.exists(pages[0]):
        assert open(pages[0], "rb").read() == open(pages[1], "rb").read(), name
    rc, stdout, _ = run(vxperf, traces[0], "--partial", "-", *options)
    assert rc == 0 and stdout == open(parts[0]).read(), name
    # Partials may hold several traces each: the same again from two.
    if len(traces) >= 2:
        half = len(traces) // 2
        two = [os.path.join(work, "%s-half%d.partial.json" % (name, i)) for i in range(2)]
        for path, group in zip(two, (traces[:half], traces[half:])):
            rc, _, stderr = run(vxperf, *group, "--partial", path, *options)
            assert rc == 0 and stderr == "", stderr
        assert run(vxperf, *traces, *options, "--json") == run(vxperf, "--merge", *two, "--json")
    return [os.path.getsize(p) for p in parts]


def expect_error(vxperf, args, says, status=2):
    rc, stdout, stderr = run(vxperf, *args)
    assert rc == status and stdout == "" and says in stderr, (args, rc, stdout, stderr)
    assert stderr.count("\n") == 1, stderr


def main():
    vxperf, traces_dir, bench, work = (os.path.abspath(a) for a in sys.argv[1:5])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    hand = sorted(os.path.join(traces_dir, n) for n in os.listdir(traces_dir)
                  if n.endswith(".json"))
    records = os.path.join(traces_dir, "waterfall.records.jsonl")
    steps = os.path.join(traces_dir, "seed_steps.json")
    no_steps = os.path.join(traces_dir, "waterfall_rank0.json")
    # A file that is no trace, said among the others; a rank read twice, left out of the merge.
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write("{\"traceEvents\": [")
    for i, trace in enumerate(hand):
        check(vxperf, work, "alone-%d" % i, [trace])
    check(vxperf, work, "hand", hand)
    check(vxperf, work, "hand-records", hand, ["--records", records])
    check(vxperf, work, "bad", [bad, steps, no_steps])
    check(vxperf, work, "replay", [steps, no_steps], ["--what-if", "--records", records])
    # Six ranks: 0 and 3 without profiler steps, in the job's window (the others have 201).
    made = subprocess.run([sys.executable, bench, "make", no_steps, steps,
                           os.path.join(traces_dir, "critical_path_syncs.json"),
                           "--out", os.path.join(work, "ranks"), "--size-mb", "0.2",
                           "--ranks", "6"], capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stderr
    ranks = sorted(os.path.join(work, "ranks", n) for n in os.listdir(os.path.join(work, "ranks")))
    sizes = check(vxperf, work, "ranks", ranks)
    check(vxperf, work, "ranks-replay", ranks, ["--replay"])
    print("6 ranks: partials of %s bytes" % ", ".join(str(s) for s in sizes))

    # What a merge refuses, each in one line.
    part = partials(vxperf, work, "refused", [steps], [])[0]
    copy = os.path.join(work, "copy.records.jsonl")
    shutil.copyfile(records, copy)
    with_records = partials(vxperf, work, "refused-records", [no_steps], ["--records", copy])[0]
    with_replay = partials(vxperf, work, "refused-replay", [no_steps], ["--replay"])[0]
    doc = json.load(open(part))
    for key, value, says in (("vxperf_partial", 1, "a partial of version 1; this vxperf reads "
                              "version 2"),
                             ("command", "report", "a partial of `vxperf report`, not of "
                              "`vxperf explain`")):
        other = os.path.join(work, "other-%s.json" % key)
        with open(other, "w") as f:
            json.dump(dict(doc, **{key: value}), f)
        expect_error(vxperf, ["--merge", part, other], other + ": " + says)
    broken = os.path.join(work, "broken.json")
    with open(broken, "w") as f:
        json.dump(dict(doc, traces=[dict(doc["traces"][0], waterfall=7)]), f)
    expect_error(vxperf, ["--merge", broken], "traces[0].waterfall: must be an array")
    expect_error(vxperf, ["--merge", records], records + ": not a vxperf partial")
    expect_error(vxperf, ["--merge", part, with_records], "joined with different records")
    expect_error(vxperf, ["--merge", part, with_replay], "different --replay/--what-if")
    expect_error(vxperf, [steps, "--partial", part, "--critical-path"],
                 "the critical path takes every rank's trace at once")
    expect_error(vxperf, ["--merge", part, "--records", records], "go with --partial")
    expect_error(vxperf, [steps, "--partial", part, "--json"], "go with --merge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
