#!/usr/bin/env python3
"""`vxperf report` output, byte for byte, against what it printed before the streaming reader
(tests/cli/report_golden.txt, written by the 0.2 command that held every record in memory).

  report_golden.py VXPERF CASES GOLDEN [--write]

Runs the text report on every conformance expectation alone and on a few sets of them together
(the text and the JSON), from CASES as the working directory so that names are relative.
"""
import os
import subprocess
import sys


def runs(cases):
    names = sorted(n for n in os.listdir(cases) if n.endswith(".expected.jsonl"))
    for n in names:
        yield [n]
    training = [n for n in names if n.startswith("training-")]
    inference = [n for n in names if n.startswith("inference-")]
    for group in (training, inference, names):
        yield group
        yield ["--json"] + group
    yield ["--compare", training[0], training[-1]]


def render(vxperf, cases):
    out = []
    for args in runs(cases):
        p = subprocess.run([vxperf, "report"] + args, cwd=cases, capture_output=True, text=True)
        out.append("=== report %s (exit %d)\n" % (" ".join(args), p.returncode))
        out.append(p.stdout)
    return "".join(out)


def main():
    vxperf, cases, golden = sys.argv[1:4]
    text = render(os.path.abspath(vxperf), cases)
    if "--write" in sys.argv[4:]:
        with open(golden, "w") as f:
            f.write(text)
        return 0
    with open(golden) as f:
        want = f.read()
    if text == want:
        return 0
    got_parts, want_parts = text.split("=== "), want.split("=== ")
    for g, w in zip(got_parts, want_parts):
        if g != w:
            print("first difference in: === " + w.splitlines()[0])
            print("--- expected\n" + w + "\n--- got\n" + g)
            break
    else:
        print("outputs differ in number: %d vs %d" % (len(got_parts), len(want_parts)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
