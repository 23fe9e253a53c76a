#!/usr/bin/env python3
"""`vxperf report` split and merged: `--partial` on each file (or group of files) alone, then
`--merge` on the partials, prints byte for byte what one run on all the files prints (text and
--json, stdout, stderr and exit status; the --html page), and what cannot be merged is refused
with the reason: a rank in two partials, a request of several ranks whose files are in two, a
corrupt partial, another version's or another command's. And one run on several threads prints
what one on a single thread does.

  report_merge.py VXPERF CASES BENCH WORK

CASES: the conformance cases (tests/conformance/cases); BENCH: bench/records_bench.py, whose
generator makes a multi-rank set (windows past what the report keeps exactly: its sketches bin
and its windows band).
"""
import importlib.util
import json
import random
import os
import shutil
import subprocess
import sys


def run(vxperf, *args, cwd=None):
    p = subprocess.run([vxperf, "report", *args], capture_output=True, cwd=cwd, check=False)
    return p.returncode, p.stdout, p.stderr


def make_partials(vxperf, work, name, groups, cwd=None):
    """A partial of each group of files, in order."""
    out = []
    for i, group in enumerate(groups):
        path = os.path.join(work, "%s-%d.partial" % (name, i))
        rc, stdout, stderr = run(vxperf, *group, "--partial", path, cwd=cwd)
        assert rc == 0 and stdout == b"" and stderr == b"", (group, rc, stdout, stderr)
        out.append(path)
    return out


def same_on_threads(vxperf, work, name, files, cwd=None):
    """One run on several threads (several files: each read whole by a worker, joined in file
    order, or read again where it cannot be) prints and writes byte for byte what one run on a
    single thread does: text, --json, the partial, the page."""
    for form in ([], ["--json"], ["--partial", "-"]):
        one = run(vxperf, *files, *form, "--threads", "1", cwd=cwd)
        many = run(vxperf, *files, *form, "--threads", "3", cwd=cwd)
        assert one == many, (name, form, one[0], many[0], one[2], many[2])
    pages = [os.path.join(work, how, name + ".html") for how in ("thread", "threads")]
    for page in pages:
        os.makedirs(os.path.dirname(page), exist_ok=True)
    one = run(vxperf, *files, "--html", pages[0], "--threads", "1", cwd=cwd)
    many = run(vxperf, *files, "--html", pages[1], "--threads", "3", cwd=cwd)
    assert one[:2] == many[:2] and one[2].replace(b"/thread/", b"/threads/") == many[2], name
    if os.path.exists(pages[0]):
        assert open(pages[0], "rb").read() == open(pages[1], "rb").read(), name


def check(vxperf, work, name, groups, cwd=None):
    """One run on every file against the groups' partials merged; returns the partials' sizes."""
    files = [f for g in groups for f in g]
    same_on_threads(vxperf, work, name, files, cwd)
    parts = make_partials(vxperf, work, name, groups, cwd)
    for form in ([], ["--json"]):
        one = run(vxperf, *files, *form, cwd=cwd)
        merged = run(vxperf, "--merge", *parts, *form, cwd=cwd)
        if one != merged:
            print("%s %s: one run and the merge differ" % (name, " ".join(form)))
            print("one run (exit %d):\n%s%s" % (one[0], one[1].decode(), one[2].decode()))
            print("merged (exit %d):\n%s%s" % (merged[0], merged[1].decode(), merged[2].decode()))
            sys.exit(1)
    # The page too (its "wrote" line names the page: the same name, in two folders).
    pages = [os.path.join(work, how, name + ".html") for how in ("one", "merged")]
    for page in pages:
        os.makedirs(os.path.dirname(page), exist_ok=True)
    one = run(vxperf, *files, "--html", pages[0], cwd=cwd)
    merged = run(vxperf, "--merge", *parts, "--html", pages[1], cwd=cwd)
    assert one[0] == merged[0] and one[1] == merged[1], name
    assert one[2].replace(b"/one/", b"/merged/") == merged[2], (one[2], merged[2])
    assert os.path.exists(pages[0]) == os.path.exists(pages[1]), name
    if os.path.exists(pages[0]):
        assert open(pages[0], "rb").read() == open(pages[1], "rb").read(), name
    # A partial on stdout is the one written to a file.
    rc, stdout, _ = run(vxperf, *groups[0], "--partial", "-", cwd=cwd)
    assert rc == 0 and stdout == open(parts[0], "rb").read(), name
    return [os.path.getsize(p) for p in parts]


def cut(path, work, lines):
    """The first `lines` lines of `path`, as a file of their own."""
    out = os.path.join(work, "cut-%d-%s" % (lines, os.path.basename(path)))
    with open(path) as f, open(out, "w") as o:
        o.writelines(f.readlines()[:lines])
    return out


def expect_error(vxperf, args, says, cwd=None):
    rc, stdout, stderr = run(vxperf, *args, cwd=cwd)
    text = stderr.decode()
    assert rc == 2 and stdout == b"" and says in text, (args, rc, stdout, text)
    assert text.count("\n") == 1, text


def rank_set(bench, folder, ranks, windows):
    """The bench's records of `ranks` ranks, then a few files that make a job partial."""
    spec = importlib.util.spec_from_file_location("records_bench", bench)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files = module.generate(folder, "set", ranks, windows, 0, seed=7)
    # A rank of a larger world whose last line was torn, a line that is no record, the world's
    # other ranks missing; and an empty file twice (the second not read: the same bytes).
    with open(files[0]) as f:
        first = f.readline()
    torn = os.path.join(folder, "set", "torn.jsonl")
    with open(torn, "w") as f:
        f.write(first.replace('"rank": 0', '"rank": %d' % ranks)
                .replace('"world_size": %d' % ranks, '"world_size": %d' % (ranks + 3)))
        f.write('{"kind": "something else"}\n')
        f.write(first[: len(first) // 2])
    empty = [os.path.join(folder, "set", "empty%d.jsonl" % i) for i in range(2)]
    for path in empty:
        open(path, "w").close()
    return files + [empty[0], torn, empty[1]]


def request_set(folder, ranks, per_rank, groups):
    """Request records of `ranks` serving ranks, a file each: the first 2 of each rank warmup,
    energy read, the stages in two orders. `groups`: ranks that compute each request together
    (context parallel: the same data-parallel index and request numbers, each its own time)."""
    rng = random.Random(11)
    os.makedirs(folder, exist_ok=True)
    files = []
    for rank in range(ranks):
        group = next((g for g in groups if rank in g), [rank])
        dp_rank = groups.index(group) if group in groups else rank
        lines = []
        for i in range(per_rank):
            e2e = rng.uniform(0.5, 3.0)
            text, vae = rng.uniform(5, 40), rng.uniform(100, 400)
            transformer = e2e * 1000 * rng.uniform(0.6, 0.8)
            stages = [("text_encoder", 1, text), ("transformer", 8, transformer),
                      ("vae_dec", 1, vae)]
            if rank % 2:
                stages.reverse()
            record = {
                "kind": "request", "ts": 5000.0 + i * 4 + rng.random(), "rank": rank,
                "world_size": ranks, "req": i, "warmup": i < 2, "e2e_s": e2e,
                "stages": {name: {"count": n, "total_ms": ms, "mean_ms": ms / n, "std_ms": 0.0,
                                  "min_ms": ms / n, "max_ms": ms / n}
                           for name, n, ms in stages},
                "dit": {"params": 1300000000, "tokens": 4096, "batch": 2, "devices": len(group),
                        "flops_per_fwd": 2.1e13 * rng.uniform(0.9, 1.1),
                        "attn_share": 0.31, "tflops": rng.uniform(40, 90), "peak_tflops": 989.0,
                        "mfu": rng.uniform(0.04, 0.09)},
                "device": "cuda:%d" % rank, "peak_alloc_bytes": rng.randrange(1 << 30, 1 << 34),
                "peak_reserved_bytes": 1 << 35, "energy_j": rng.uniform(100, 900),
                "energy_from": "counter",
            }
            if len(group) > 1:
                record["parallel"] = {"dp": ranks // len(group), "cp": len(group), "tp": 1,
                                      "group": len(group), "dp_rank": dp_rank}
            lines.append(json.dumps(record) + "\n")
        path = os.path.join(folder, "serve-rank%d.jsonl" % rank)
        with open(path, "w") as f:
            f.writelines(lines)
        files.append(path)
    return files


def main():
    vxperf, cases, bench, work = (os.path.abspath(a) for a in sys.argv[1:5])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    names = sorted(n for n in os.listdir(cases) if n.endswith(".expected.jsonl"))
    training = [n for n in names if not n.startswith(("inference-", "i-"))]
    inference = [n for n in names if n not in training]

    # Each training case alone and all of them in one partial (their ranks repeat across cases:
    # they cannot be split by file).
    for n in training:
        check(vxperf, work, n, [[n]], cwd=cases)
    check(vxperf, work, "training", [training], cwd=cases)
    # The inference cases: each alone, all in one partial, and in two partials of their files.
    for n in inference:
        check(vxperf, work, n, [[n]], cwd=cases)
    check(vxperf, work, "inference", [inference], cwd=cases)

    # Serving ranks, a file each, split into one partial, one a file and two (the page's last
    # 300 bars over more than one partial).
    served = request_set(os.path.join(work, "served"), 4, 120, [])
    sizes = check(vxperf, work, "served-n", [[f] for f in served])
    check(vxperf, work, "served-1", [served])
    check(vxperf, work, "served-2", [served[:3], served[3:]])
    print("partial of a serving rank's 120 requests: %d-%d bytes; of 118: %d more a request"
          % (min(sizes), max(sizes),
             (max(sizes) - check(vxperf, work, "served-118", [[cut(served[0], work, 118)]])[0])
             // 2))
    # Ranks 0 and 1 computing each request together (ranks 2 and 3 too): one partial of the
    # pair's files folds each request's records as one run does; a pair across partials is
    # refused, naming the request.
    pairs = request_set(os.path.join(work, "pairs"), 4, 30, [[0, 1], [2, 3]])
    check(vxperf, work, "pairs", [pairs[:2], pairs[2:]])
    check(vxperf, work, "pairs-1", [pairs])
    parts = make_partials(vxperf, work, "pairs-split", [[pairs[0]], pairs[1:]])
    expect_error(vxperf, ["--merge", *parts], "request 2 of data-parallel rank 0 is computed by "
                 "ranks in both " + parts[0] + " and " + parts[1])
    # With windows of training in the same partials.
    check(vxperf, work, "mixed", [pairs[:2] + [training[0]]], cwd=cases)

    # A multi-rank job: one partial, one a file, and two of half the files each.
    files = rank_set(bench, work, 8, 300)
    one = check(vxperf, work, "ranks-1", [files])
    sizes = check(vxperf, work, "ranks-n", [[f] for f in files])
    half = len(files) // 2
    check(vxperf, work, "ranks-2", [files[:half], files[half:]])
    print("partial of the 8 ranks together: %d bytes; one a rank: %d-%d bytes"
          % (one[0], min(sizes[:8]), max(sizes[:8])))

    # No record in any file: the error one run gives. No record in one partial's: no error.
    bad = [os.path.join(work, "bad%d.jsonl" % i) for i in range(2)]
    for i, path in enumerate(bad):
        with open(path, "w") as f:
            f.write('{"kind": "nothing"}\n' * (i + 1))
    check(vxperf, work, "no-records", [[bad[0]], [bad[1]]])
    check(vxperf, work, "one-without", [[bad[1]], files[:2]])

    # A rank in two partials, a file with records in two: refused, naming them.
    with open(files[0]) as f:
        lines = f.readlines()
    halves = [os.path.join(work, "rank0-%d.jsonl" % i) for i in range(2)]
    for path, part in zip(halves, (lines[:100], lines[100:])):
        with open(path, "w") as f:
            f.writelines(part)
    # One run reads a rank split in two files on one thread or several alike (the second half
    # read again into the run's state: a rank's sketches are over all its windows in order).
    same_on_threads(vxperf, work, "split-1", halves + files[1:4])
    parts = make_partials(vxperf, work, "split", [[halves[0]], [halves[1]]])
    expect_error(vxperf, ["--merge", *parts], "rank 0 is in both " + parts[0] + " and " + parts[1])
    copy = os.path.join(work, "copy.jsonl")
    shutil.copy(files[0], copy)
    parts = make_partials(vxperf, work, "copied", [[files[0]], [copy]])
    expect_error(vxperf, ["--merge", *parts], "the same bytes as " + files[0])

    # Not a partial of this version, or not one at all.
    good = open(parts[0], "rb").read()
    corrupt = os.path.join(work, "corrupt.partial")
    with open(corrupt, "wb") as f:
        f.write(good[:-100] + bytes([good[-100] ^ 1]) + good[-99:])
    expect_error(vxperf, ["--merge", corrupt], "corrupt: its checksum does not match")
    with open(corrupt, "wb") as f:
        f.write(good[: len(good) // 2])
    expect_error(vxperf, ["--merge", corrupt], "corrupt")
    other = os.path.join(work, "other.partial")
    with open(other, "wb") as f:
        f.write(good.replace(b"VXPERF-PARTIAL report 2\n", b"VXPERF-PARTIAL report 99\n", 1))
    expect_error(vxperf, ["--merge", other], "a partial of version 99; this vxperf reads version 2")
    explain = os.path.join(work, "explain.partial.json")
    with open(explain, "w") as f:
        f.write('{"vxperf_partial": 1, "command": "explain"}\n')
    expect_error(vxperf, ["--merge", explain],
                 "a partial of `vxperf explain`, not of `vxperf report`")
    expect_error(vxperf, ["--merge", files[0]], "not a vxperf partial")
    p = subprocess.run([vxperf, "explain", "--merge", parts[0]], capture_output=True, text=True)
    assert p.returncode == 2 and "a partial of `vxperf report`, not of `vxperf explain`" in p.stderr

    # A folder is read as its files (0a58ebb): one that is no partial is refused by name.
    expect_error(vxperf, ["--merge", work], "bad0.jsonl: not a vxperf partial")
    # Usage: the flags as explain's.
    expect_error(vxperf, [files[0], "--partial", "x", "--json"],
                 "--json and --html go with --merge")
    expect_error(vxperf, ["--merge", parts[0], "--threads", "2"], "go with --partial")
    expect_error(vxperf, ["--merge", parts[0], "--partial", "x"], "one or the other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
