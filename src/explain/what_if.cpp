#include "explain/what_if.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "explain/hta_analysis.h"
#include "explain/hta_rules.h"

namespace vxperf::explain {

namespace {

// One edit; what is wrong is said of it as written.
WhatIfEdit parse_edit(const std::string& spec) {
  WhatIfEdit w;
  w.spec = spec;
  if (spec == "host") {
    w.kind = WhatIfEdit::Kind::kHost;
  } else if (spec == "comm") {
    w.kind = WhatIfEdit::Kind::kComm;
  } else if (spec == "copies") {
    w.kind = WhatIfEdit::Kind::kCopies;
  } else if (spec == "peak") {
    w.kind = WhatIfEdit::Kind::kPeak;
  } else if (spec.rfind("kernel:", 0) == 0) {
    // The last '=' splits the factor off: a regex may hold '=' of its own.
    const std::size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq < 7) {
      throw std::invalid_argument("--what-if " + spec + ": kernel:REGEX=FACTOR expected");
    }
    w.kind = WhatIfEdit::Kind::kKernel;
    w.pattern = spec.substr(7, eq - 7);
    const std::string f = spec.substr(eq + 1);
    const char* end = f.data() + f.size();
    auto [at, ec] = std::from_chars(f.data(), end, w.factor);
    if (ec != std::errc() || at != end || !std::isfinite(w.factor) || w.factor < 0) {
      throw std::invalid_argument("--what-if " + spec + ": the factor must be a number >= 0 (" +
                                  "0.7: those kernels take 70% of their time)");
    }
    try {
      const std::regex check(w.pattern);
      (void)check;
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("--what-if " + spec + ": not a regular expression (" + e.what() +
                                  ")");
    }
  } else if (spec.rfind("steps:", 0) == 0) {
    w.kind = WhatIfEdit::Kind::kSkipSteps;
    const std::string k = spec.substr(6);
    const char* end = k.data() + k.size();
    auto [at, ec] = std::from_chars(k.data(), end, w.steps);
    if (ec != std::errc() || at != end || w.steps < 1) {
      throw std::invalid_argument("--what-if " + spec + ": steps:K with K >= 1 expected");
    }
  } else {
    throw std::invalid_argument("--what-if " + spec +
                                ": one of host, comm, copies, peak, kernel:REGEX=FACTOR, steps:K "
                                "expected");
  }
  return w;
}

// Whether a piece after a comma begins an edit of its own (else it is a kernel REGEX's comma).
bool names_an_edit(const std::string& piece) {
  return piece == "host" || piece == "comm" || piece == "copies" || piece == "peak" ||
         piece.rfind("kernel:", 0) == 0 || piece.rfind("steps:", 0) == 0;
}

}  // namespace

WhatIfSpec parse_what_if(const std::string& spec) {
  std::vector<std::string> pieces;
  for (std::size_t at = 0;;) {
    const std::size_t comma = spec.find(',', at);
    std::string piece = spec.substr(at, comma == std::string::npos ? comma : comma - at);
    if (pieces.empty() || names_an_edit(piece)) {
      pieces.push_back(std::move(piece));
    } else {
      pieces.back() += "," + piece;
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  WhatIfSpec w;
  w.spec = spec;
  for (const std::string& piece : pieces) {
    for (const WhatIfEdit& e : w.edits) {
      if (e.spec == piece) {
        throw std::invalid_argument("--what-if " + spec + ": " + piece + " is named twice");
      }
    }
    w.edits.push_back(parse_edit(piece));
  }
  return w;
}

std::vector<WhatIfSpec> standard_what_ifs() {
  std::vector<WhatIfSpec> out;
  for (const char* s : {"host", "comm", "copies", "peak", "steps:1"})
    out.push_back(parse_what_if(s));
  return out;
}

namespace {

// The denoising steps skipped of a request's `n`: K spread evenly, never the first (TeaCache-like
// caches always compute it), at most n - 1.
std::vector<std::int64_t> skipped_steps(std::int64_t n, std::int64_t k) {
  k = std::min(k, n - 1);
  std::vector<std::int64_t> out;
  for (std::int64_t j = 1; j <= k; ++j) out.push_back(j * n / (k + 1));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// `spec` applied to `w` (the weights the edits before it left). `why` is set when nothing in the
// trace is for it.
void apply_edit(const ReplayGraph& g, const KinetoTrace& t, const std::vector<TraceRange>& ranges,
                const WhatIfEdit& spec, std::vector<double>& w, std::string& why) {
  auto row_of = ReplayGraph::row_of;
  switch (spec.kind) {
    case WhatIfEdit::Kind::kHost:
      if (std::none_of(t.rows.begin(), t.rows.end(), [](const Row& r) { return r.device; })) {
        why = "a CPU-only profile: the host's time is the work, not overhead";
        break;
      }
      // Launches back to back (as a CUDA graph replays them): the host's own time weighs nothing,
      // a launch's delay to its device row loses its call's duration (what stays is the device's
      // own latency); waits for the device and data loading stay.
      g.for_each_edge([&](ReplayGraph::EdgeId e, ReplayGraph::Node to) {
        const EdgeKind k = g.kind(e);
        const Bound b = g.bound(e);
        if (k == EdgeKind::kWorker ||
            (k == EdgeKind::kThread && (b == Bound::kHost || b == Bound::kLaunch))) {
          w[e] = 0;
        } else if (k == EdgeKind::kLaunch) {
          const Row& call = t.rows[row_of(g.src(e))];
          w[e] = std::max(0.0, std::min(w[e], g.weight(e, to) - std::max(0.0, call.dur)));
        }
      });
      break;
    case WhatIfEdit::Kind::kComm:
    case WhatIfEdit::Kind::kCopies: {
      const Bound gone =
          spec.kind == WhatIfEdit::Kind::kComm ? Bound::kCommunication : Bound::kCopies;
      g.for_each_run_edge([&](std::uint32_t, ReplayGraph::EdgeId e) {
        if (g.bound(e) == gone) w[e] = 0;
      });
      break;
    }
    case WhatIfEdit::Kind::kKernel: {
      const std::regex re(spec.pattern);
      std::vector<signed char> match(t.strings.size(), -1);
      g.for_each_edge([&](ReplayGraph::EdgeId e, ReplayGraph::Node to) {
        if (g.kind(e) != EdgeKind::kRun) return;
        const std::uint32_t name = t.rows[row_of(to)].name;
        if (match[name] < 0) match[name] = std::regex_search(t.strings[name], re) ? 1 : 0;
        if (match[name] == 1) w[e] *= spec.factor;
      });
      break;
    }
    case WhatIfEdit::Kind::kPeak: {
      // Each priced range's computation scaled to its FLOPs at the peak (never slower). The
      // innermost range holding a row decides (parents come first in `ranges`): one without
      // FLOPs (a text encoder, a VAE, the optimizer) keeps its rows as they ran, though its
      // request or step is priced.
      const std::vector<KernelType> types = types_of(t);
      std::unordered_map<std::uint32_t, double> factor;
      for (const TraceRange& r : ranges) {
        if (!r.ideal_s) {
          for (std::uint32_t p : r.device) factor.erase(p);
          continue;
        }
        std::vector<Interval> comp;
        for (std::uint32_t p : r.device) {
          const Row& d = t.rows[p];
          if (types[d.name] == KernelType::kComputation)
            comp.push_back({d.ts, std::max(d.ts, d.end())});
        }
        const double us = length(union_of(comp));
        if (us <= 0) continue;
        const double f = std::min(1.0, *r.ideal_s * 1e6 / us);
        for (std::uint32_t p : r.device) {
          if (types[t.rows[p].name] == KernelType::kComputation) factor[p] = f;
        }
      }
      if (factor.empty()) {
        why = "no range with device work is priced by FLOPs (no records, or none for them)";
        break;
      }
      for (const auto& [row, f] : factor) {
        const ReplayGraph::EdgeId e = g.run_edge(row);
        if (e == ReplayGraph::kNone) continue;
        // A floor: a row another edit made faster than its peak time keeps that (an untouched
        // row is exactly its time scaled).
        const double was = g.run_weight(row);
        const double at_peak = was * f;
        if (w[e] == was || at_peak < w[e]) w[e] = at_peak;
      }
      break;
    }
    case WhatIfEdit::Kind::kSkipSteps: {
      // Per request and stage, its denoising steps in order.
      std::map<std::pair<std::int64_t, std::uint32_t>, std::vector<const TraceRange*>> steps;
      for (const TraceRange& r : ranges) {
        if (r.request && r.step_index >= 0) steps[{r.root, t.rows[r.row].name}].push_back(&r);
      }
      std::vector<const TraceRange*> skipped;
      for (auto& [key, list] : steps) {
        std::sort(list.begin(), list.end(), [](const TraceRange* a, const TraceRange* b) {
          return a->step_index < b->step_index;
        });
        if (list.size() < 2) continue;
        for (std::int64_t i : skipped_steps(static_cast<std::int64_t>(list.size()), spec.steps)) {
          skipped.push_back(list[static_cast<std::size_t>(i)]);
        }
      }
      if (skipped.empty()) {
        why = "no request with two transformer calls or more";
        break;
      }
      // A skipped step's device rows take no time and wait for nothing; its host time, on its
      // thread within its range, is gone.
      std::vector<char> gone_row(t.rows.size(), 0);
      // Per thread, the skipped ranges by start with the latest end so far: an edge lies in one
      // when one starting at or before its start ends at or after its end (a search, not a scan
      // of every skipped step per edge).
      struct Gone {
        std::vector<Interval> by_begin;
        std::vector<double> latest_end;
      };
      std::unordered_map<std::int32_t, Gone> gone_host;
      for (const TraceRange* r : skipped) {
        for (std::uint32_t p : r->device) gone_row[p] = 1;
        const Row& row = t.rows[r->row];
        const Interval i{row.ts, std::max(row.ts, row.end())};
        if (i.begin == i.begin && i.end == i.end) gone_host[row.tid].by_begin.push_back(i);
      }
      for (auto& [tid, gone] : gone_host) {
        std::sort(gone.by_begin.begin(), gone.by_begin.end(),
                  [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
        double latest = -std::numeric_limits<double>::infinity();
        for (const Interval& i : gone.by_begin)
          gone.latest_end.push_back(latest = std::max(latest, i.end));
      }
      g.for_each_edge([&](ReplayGraph::EdgeId e, ReplayGraph::Node node) {
        const std::uint32_t dst = row_of(node);
        const Row d = t.row(dst);
        if (d.device) {
          if (gone_row[dst] != 0) w[e] = 0;
          return;
        }
        auto it = gone_host.find(d.tid);
        if (it == gone_host.end()) return;
        const double from = g.measured(g.src(e)), to = g.measured(node);
        if (from != from || to != to) return;  // NaN lies in nothing
        const std::vector<Interval>& by_begin = it->second.by_begin;
        const auto started = static_cast<std::size_t>(
            std::upper_bound(by_begin.begin(), by_begin.end(), from,
                             [](double x, const Interval& i) { return x < i.begin; }) -
            by_begin.begin());
        if (started > 0 && it->second.latest_end[started - 1] >= to) w[e] = 0;
      });
      break;
    }
  }
}

}  // namespace

void what_if_weights(const ReplayGraph& g, const KinetoTrace& t,
                     const std::vector<TraceRange>& ranges, std::vector<const WhatIfEdit*> edits,
                     std::vector<double>& w, std::string& why) {
  g.weights_into(w);
  // The kinds' order: a kernel's factor before peak's floor, whatever the order given.
  std::stable_sort(edits.begin(), edits.end(),
                   [](const WhatIfEdit* a, const WhatIfEdit* b) { return a->kind < b->kind; });
  for (const WhatIfEdit* edit : edits) {
    std::string not_here;
    apply_edit(g, t, ranges, *edit, w, not_here);
    if (!not_here.empty()) {
      why = edits.size() > 1 ? edit->spec + ": " + not_here : not_here;
      g.weights_into(w);
      return;
    }
  }
}

}  // namespace vxperf::explain
