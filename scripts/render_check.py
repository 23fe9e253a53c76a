#!/usr/bin/env python3
"""Renders `vxperf report --html` pages in headless Chromium and checks what came out.

Four pages: `vxperf explain --html` on a trace of tests/explain (the waterfall, the ranks' temporal
breakdown, idle per stream), a small report (a restarted 2-rank job, a conformance case's requests
and their transformer calls from its level-2 log), the comparison of two runs, and a large one (1024
ranks x 40 windows with one straggler, and 20000 requests). For each: the page's script ran without
an error (the DOM Chromium dumps carries data-drawn, the number of heatmaps drawn, and no
data-errors), Chromium logged no console error, and a screenshot of the requested size whose
pixels hold the charts: enough ink, enough colors, and for the heatmaps their palette (the
straggler's cell in the excess palette's dark end).

  build-venv/bin/python scripts/render_check.py VXPERF [WORKDIR]

Each page's charts are also measured where Chromium laid them out (a script added to the page,
its verdict in data-layout): no text outside its chart (a legend cut off), no two texts of a row
over each other, a color per legend entry, and each y axis fitted to its data (the highest mark
above the second-highest grid line). The small report holds a 2-rank job restarted once, whose
ledger has all twelve parts.

Fails when Chromium is missing, since scripts/setup.sh installs it; without numpy or Pillow
(build-venv has them, a minimal setup has not) every check but the screenshots' pixels runs.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "tests", "conformance", "cases")


def fail(message):
    print("render_check: FAIL: " + message)
    sys.exit(1)


def read_pixels(path):
    """(width, height, the pixels as an int array of height x width x RGB)."""
    import numpy
    from PIL import Image

    with Image.open(path) as image:
        pixels = numpy.asarray(image.convert("RGB"), dtype=numpy.int32)
    return pixels.shape[1], pixels.shape[0], pixels


# Measures the charts as laid out; its verdict goes in <body data-layout="ok" | "what is wrong">.
LAYOUT_SCRIPT = r"""<script>
window.addEventListener('load', function () {
  var errors = [];
  function rect(e) { return e.getBoundingClientRect(); }
  document.querySelectorAll('svg').forEach(function (svg, n) {
    var box = rect(svg), t = svg.querySelector('text.title');
    var name = t ? t.textContent : 'chart ' + n;
    var texts = Array.prototype.slice.call(svg.querySelectorAll('text'));
    texts.forEach(function (x) {
      var b = rect(x);
      if (b.width === 0) return;
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 ||
          b.bottom > box.bottom + 1) errors.push(name + ': "' + x.textContent + '" cut off');
    });
    var flat = texts.filter(function (x) { return !x.hasAttribute('transform'); });
    for (var i = 0; i < flat.length; ++i) {
      for (var j = i + 1; j < flat.length; ++j) {
        if (flat[i].getAttribute('y') !== flat[j].getAttribute('y')) continue;
        var a = rect(flat[i]), b = rect(flat[j]);
        if (a.width && b.width && a.right > b.left + 0.5 && b.right > a.left + 0.5) {
          errors.push(name + ': "' + flat[i].textContent + '" over "' + flat[j].textContent + '"');
        }
      }
    }
    var fills = {};
    svg.querySelectorAll('text.legend').forEach(function (x) {
      var swatch = x.previousElementSibling, fill = swatch && swatch.getAttribute('fill');
      if (fills[fill]) errors.push(name + ': "' + fills[fill] + '" and "' + x.textContent +
                                   '" share ' + fill);
      fills[fill] = x.textContent;
    });
    var grid = [];
    svg.querySelectorAll('line.grid').forEach(function (l) {
      if (l.getAttribute('y1') === l.getAttribute('y2')) grid.push(+l.getAttribute('y1'));
    });
    grid.sort(function (a, b) { return a - b; });
    var marks = [];
    svg.querySelectorAll('circle').forEach(function (c) { marks.push(+c.getAttribute('cy')); });
    svg.querySelectorAll('rect').forEach(function (r) {
      if (r.querySelector('title')) marks.push(+r.getAttribute('y'));
    });
    svg.querySelectorAll('polygon').forEach(function (p) {
      p.getAttribute('points').trim().split(/\s+/).forEach(function (xy) {
        marks.push(+xy.split(',')[1]);
      });
    });
    if (grid.length >= 3 && marks.length) {
      var top = Math.min.apply(null, marks);
      if (top > grid[1] + 0.5) {
        errors.push(name + ': the axis runs past its data (highest mark at y ' + top +
                    ', the top grid lines at ' + grid[0] + ' and ' + grid[1] + ')');
      }
    }
  });
  document.body.setAttribute('data-layout', errors.length ? errors.slice(0, 6).join(' | ')
                                                          : 'ok');
});
</script>"""


def ledger_records(path):
    """Two ranks, each restarted once at step 20 after a save at step 10: every part of the
    ledger (start-up, lost progress and the time between attempts among them) is there."""
    lines = []
    for rank in range(2):
        for attempt, (first_step, start) in enumerate(((0, 1000.0), (10, 1100.0))):
            for k in range(2):
                step_first = first_step + 10 * k
                steps = 10 * (k + 1)
                productive = 0.5 * steps
                ledger = {"wall_s": 0.0, "steps": steps, "ideal_step_s": 0.5,
                          "startup_s": 3.0 + rank, "setup_s": 1.5, "productive_s": productive,
                          "first_step_excess_s": 1.2, "slow_step_excess_s": 0.4 * (k + 1),
                          "data_wait_s": 0.3 * steps * (1 + rank), "save_s": 0.8 * k,
                          "restore_s": 0.6 * attempt, "eval_s": 0.5, "between_steps_s": 0.2,
                          "goodput": 0.0}
                parts = [v for key, v in ledger.items() if key.endswith("_s")
                         and key not in ("wall_s", "ideal_step_s")]
                ledger["wall_s"] = sum(parts)
                ledger["goodput"] = productive / ledger["wall_s"]
                lines.append(json.dumps({
                    "kind": "train_window", "ts": start + ledger["wall_s"], "rank": rank,
                    "world_size": 2, "attempt": attempt, "step_first": step_first,
                    "step_last": step_first + 9, "steps": 10, "warmup_excluded": 0,
                    "step_s_p50": 0.5 + 0.3 * rank, "step_s_p95": 0.7 + 0.3 * rank,
                    "phases_s": {"data": 0.03 * (1 + rank), "fwd": 0.15, "bwd": 0.3,
                                 "opt": 0.02},
                    "ledger": ledger}))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Browser:
    def __init__(self, work):
        self.exe = shutil.which("chromium") or shutil.which("chromium-browser")
        self.work = work
        try:
            import numpy  # noqa: F401  (the screenshots' pixels)
            import PIL  # noqa: F401
            self.pixels = True
        except ImportError:
            self.pixels = False

    def run(self, page, *args):
        profile = tempfile.mkdtemp(prefix="chromium-")
        try:
            out = subprocess.run(
                [self.exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--enable-logging=stderr",
                 "--v=0", "--user-data-dir=" + profile, *args, "file://" + page],
                capture_output=True, text=True, timeout=180)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        if out.returncode != 0:
            fail(f"chromium exited {out.returncode} on {page}: {out.stderr[-800:]}")
        console = [line for line in out.stderr.splitlines() if ":CONSOLE" in line]
        if console:
            fail(f"{page}: console messages: {console[:3]}")
        return out.stdout

    def check(self, page, heatmaps, size, palettes=()):
        """The page's script drew `heatmaps` canvases without an error; a screenshot of `size`
        holds charts, and pixels of each (color, at least) in `palettes`."""
        shot = os.path.join(self.work, os.path.basename(page) + ".png")
        if os.path.exists(shot):
            os.remove(shot)
        with open(page) as f:
            html = f.read()
        if LAYOUT_SCRIPT not in html:
            with open(page, "w") as f:
                f.write(html.replace("</body>", LAYOUT_SCRIPT + "</body>", 1))
        # One load: the DOM once the page's script ran, and the screenshot.
        dom = self.run(page, "--dump-dom", f"--screenshot={shot}",
                       f"--window-size={size[0]},{size[1]}", "--hide-scrollbars")
        if 'data-errors="' in dom:
            start = dom.index('data-errors="')
            fail(f"{page}: script errors: {dom[start:start + 300]}")
        if f'data-drawn="{heatmaps}"' not in dom:
            fail(f"{page}: expected data-drawn=\"{heatmaps}\" (the script did not finish?)")
        if 'data-layout="ok"' not in dom:
            start = dom.find('data-layout="')
            fail(f"{page}: charts laid out wrong: "
                 + (dom[start:start + 900] if start >= 0 else "the layout check did not run"))
        if not self.pixels:
            if not os.path.getsize(shot):
                fail(f"{shot}: empty")
            print(f"render_check: {os.path.basename(page)}: {os.path.getsize(shot)} bytes, "
                  f"{heatmaps} heatmaps, no script or console error, charts laid out whole "
                  "(pixels unread: no numpy or Pillow)")
            return
        width, height, pixels = read_pixels(shot)
        if (width, height) != size:
            fail(f"{shot}: {width}x{height}, expected {size[0]}x{size[1]}")
        ink = float((pixels.min(axis=2) < 200).mean())
        packed = (pixels[:, :, 0] << 16) | (pixels[:, :, 1] << 8) | pixels[:, :, 2]
        colors = len(set(packed.ravel().tolist()))
        if ink < 0.015 or colors < 100:
            fail(f"{shot}: looks blank ({ink:.1%} ink, {colors} colors)")
        found = []
        for color, least in palettes:
            # within 30 of the color (Euclidean, RGB)
            n = int((((pixels - color) ** 2).sum(axis=2) <= 30 * 30).sum())
            if n < least:
                fail(f"{shot}: {n} pixels near {color}, expected at least {least}")
            found.append(n)
        print(f"render_check: {os.path.basename(page)}: {width}x{height}, "
              f"{os.path.getsize(shot)} bytes, {ink:.1%} ink, {colors} colors, "
              f"palette pixels {found}, {heatmaps} heatmaps, no script or console error, "
              "charts laid out whole")


def window_line(rank, index, slow):
    steps = 10
    phases = {"data": 0.05, "fwd": 0.9, "bwd": 1.6, "opt": 0.05}
    if slow:
        phases["data"] += 1.0
    p50 = sum(phases.values()) + random.random() * 0.05
    return json.dumps({
        "kind": "train_window", "ts": 1000.0 + index, "rank": rank, "world_size": 1024,
        "step_first": index * steps, "step_last": index * steps + steps - 1, "steps": steps,
        "warmup_excluded": 0, "step_s_p50": p50, "step_s_p95": p50 * 1.1, "phases_s": phases,
        "micro_steps": 1.0, "overrun_s": 0.0, "device": "cuda:%d" % (rank % 8),
        "peak_alloc_bytes": (50 << 30) + random.randrange(1 << 30),
        "peak_reserved_bytes": 70 << 30})


def request_line(index):
    e2e = 10.0 + random.random() * 2
    return json.dumps({
        "kind": "request", "ts": 1000.0 + index, "rank": 0, "world_size": 1, "req": index,
        "warmup": index == 0, "e2e_s": e2e,
        "stages": {"transformer": {"count": 50, "total_ms": e2e * 850, "mean_ms": e2e * 17,
                                   "std_ms": 1.0, "min_ms": 15.0, "max_ms": 30.0},
                   "vae_dec": {"count": 1, "total_ms": e2e * 120, "mean_ms": e2e * 120,
                               "std_ms": 0.0, "min_ms": 1.0, "max_ms": 1.0}}})


def vxperf_report(vxperf, *args):
    out = subprocess.run([vxperf, "report", *args], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"vxperf report {' '.join(args)}: exit {out.returncode}: {out.stderr[-500:]}")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    vxperf = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else tempfile.mkdtemp()
    browser = Browser(work)
    if not browser.exe:
        fail("chromium not installed: scripts/setup.sh installs it (apt-get install chromium)")
    os.makedirs(work, exist_ok=True)
    case = lambda name: os.path.join(CASES, name)
    viridis_dark, excess_dark = (68, 1, 84), (215, 48, 31)

    small = os.path.join(work, "small.html")
    restarted = os.path.join(work, "restarted.jsonl")
    ledger_records(restarted)
    vxperf_report(vxperf, restarted, case("inference-2-01.expected.jsonl"),
                  "--html", small, "--steps", case("inference-2-01.expected.log"))
    with open(small) as f:
        if "lost progress" not in f.read():
            fail(f"{small}: no ledger chart with lost progress")
    browser.check(small, 2, (1200, 3600))

    compare = os.path.join(work, "compare.html")
    vxperf_report(vxperf, "--compare", case("training-2-02.expected.jsonl"),
                  case("training-2-03.expected.jsonl"), "--html", compare)
    browser.check(compare, 0, (1200, 1400), [((89, 161, 79), 200)])  # a "better" bar at least

    traces = os.path.join(ROOT, "tests", "explain", "traces")
    explained = os.path.join(work, "explain.html")
    out = subprocess.run([vxperf, "explain", os.path.join(traces, "waterfall_rank0.json"),
                          "--records", os.path.join(traces, "waterfall.records.jsonl"),
                          "--html", explained], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"vxperf explain --html: exit {out.returncode}: {out.stderr[-500:]}")
    browser.check(explained, 0, (1200, 1600))

    random.seed(7)
    big = os.path.join(work, "large")
    os.makedirs(big, exist_ok=True)
    files = []
    for rank in range(1024):
        path = os.path.join(big, "rank%04d.jsonl" % rank)
        with open(path, "w") as f:
            for index in range(40):
                f.write(window_line(rank, index, rank == 700 and 10 <= index < 20) + "\n")
        files.append(path)
    serving = os.path.join(big, "serving.jsonl")
    with open(serving, "w") as f:
        for index in range(20000):
            f.write(request_line(index) + "\n")
    large = os.path.join(work, "large.html")
    vxperf_report(vxperf, *files, serving, "--html", large)
    size = os.path.getsize(large)
    if size > 8 << 20:
        fail(f"{large} is {size} bytes: too big to open")
    # Both heatmaps drawn: the step-time one in its palette, the straggler's band in the excess
    # palette's dark end (one band of 4 ranks x 10 windows, 2 px a row).
    browser.check(large, 2, (1200, 4200), [(viridis_dark, 2000), (excess_dark, 100)])
    print(f"render_check: ok ({large}: {size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
