#include "explain/waterfall.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "explain/hta_analysis.h"
#include "explain/hta_rules.h"
#include "vxperf/phases.h"
#include "vxperf/records_reader.h"
#include "vxperf/stages.h"

namespace vxperf::explain {
namespace {

namespace fs = std::filesystem;

// "request 12" -> 12 for prefix "request "; else -1.
std::int64_t numbered(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  std::int64_t n = -1;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  auto [end, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && end == last ? n : -1;
}

// A training phase's range: the phase table's names, and "model_call", the range of a model call
// whose phase is said only at its end (a forward, in a training step).
bool is_phase_name(std::string_view name) {
  return name == "model_call" || phase_from_name(name).has_value();
}

enum class Kind { kNone, kRequest, kStage, kTrainStep, kMicroStep, kPhase };

struct Node {
  const Row* row = nullptr;
  std::uint32_t pos = 0;  // the row's position in trace.rows
  Kind kind = Kind::kNone;
  std::int64_t number = -1;      // the request's or step's
  std::int64_t parent = -1;      // the enclosing range on its thread
  std::int64_t owner = -1;       // itself when it is one of vxperf's, else the nearest one above
  std::int64_t root = -1;        // its request or step
  std::int64_t step_index = -1;  // a priced stage's call number within its request
  std::vector<std::uint32_t> device;  // rows (into trace.rows) its launches ran
};

// Of two ranges of one thread with the same start and duration, the one that can hold the other:
// a request or step, then a micro-step, then any other (in file order, as Kineto writes the outer
// first).
int nesting_rank(std::string_view name) {
  if (numbered(name, "request ") >= 0 || numbered(name, "step ") >= 0) return 0;
  return name == "micro_step" ? 1 : 2;
}

class Builder {
 public:
  Builder(const KinetoTrace& t, const Records& records, bool keep_ranges)
      : t_(t), records_(records), keep_ranges_(keep_ranges) {
    for (const StageInfo& s : kStages) known_stages_.emplace(s.name);
    known_stages_.insert(t.declared_stages.begin(), t.declared_stages.end());
  }

  RankWaterfall build() {
    RankWaterfall out;
    out.matched.assign(records_.files.size(), 0);
    out.priced.assign(records_.files.size(), 0);
    collect_ranges();
    if (nodes_.empty()) return out;
    attribute_launches();
    join(out);
    out.rows = aggregate(out.ranges);
    return out;
  }

 private:
  // A stage of the request `request`: a name the request's record lists, the trace declares as
  // one of vxperf's stages, or the stage table holds.
  bool is_stage(std::string_view name, const Node& request) const {
    if (known_stages_.find(name) != known_stages_.end()) return true;
    auto it = records_.requests.find({t_.rank, request.number});
    if (it == records_.requests.end()) return false;
    for (std::uint32_t s : it->second.stages) {
      if (records_.stage_names[s] == name) return true;
    }
    return false;
  }

  void collect_ranges() {
    for (std::size_t p = 0; p < t_.rows.size(); ++p) {
      const Row& r = t_.rows[p];
      if (r.device || t_.category(r) != "user_annotation") continue;
      if (t_.str(r.name).rfind("ProfilerStep", 0) == 0) continue;
      Node n;
      n.row = &r;
      n.pos = static_cast<std::uint32_t>(p);
      nodes_.push_back(n);
    }
    // Nesting per thread: sorted by start, the longer first, a stack of the open ones.
    std::vector<std::int64_t> order(nodes_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      const Row& x = *nodes_[a].row;
      const Row& y = *nodes_[b].row;
      if (x.tid != y.tid) return x.tid < y.tid;
      if (x.ts != y.ts) return x.ts < y.ts;
      if (x.dur != y.dur) return x.dur > y.dur;
      const int rx = nesting_rank(t_.str(x.name)), ry = nesting_rank(t_.str(y.name));
      if (rx != ry) return rx < ry;
      return x.index < y.index;
    });
    std::vector<std::int64_t> stack;
    std::int64_t tid = 0;
    for (std::int64_t i : order) {
      const Row& r = *nodes_[i].row;
      if (stack.empty() || tid != r.tid) stack.clear();
      tid = r.tid;
      while (!stack.empty() && nodes_[stack.back()].row->end() <= r.ts) stack.pop_back();
      nodes_[i].parent = stack.empty() ? -1 : stack.back();
      stack.push_back(i);
    }
    // Which are vxperf's: requests and steps, the stages of a request, the micro-steps and phases
    // of a step. A range belongs to the nearest of vxperf's ranges above it, whatever ranges torch
    // or the program opened in between (DDP's forward, a collective's, a compiled region's, the
    // program's own); a range that is not vxperf's is never a stage or a phase. Parents come first
    // in `order`.
    for (std::int64_t i : order) {
      Node& n = nodes_[i];
      const std::string_view name = t_.str(n.row->name);
      const std::int64_t above = n.parent >= 0 ? nodes_[n.parent].owner : -1;
      const Kind ak = above >= 0 ? nodes_[above].kind : Kind::kNone;
      if ((n.number = numbered(name, "request ")) >= 0) {
        n.kind = Kind::kRequest;
      } else if ((n.number = numbered(name, "step ")) >= 0) {
        n.kind = Kind::kTrainStep;
      } else if (ak == Kind::kRequest && is_stage(name, nodes_[above])) {
        n.kind = Kind::kStage;
      } else if (ak == Kind::kTrainStep && name == "micro_step") {
        n.kind = Kind::kMicroStep;
      } else if ((ak == Kind::kTrainStep || ak == Kind::kMicroStep) && is_phase_name(name)) {
        n.kind = Kind::kPhase;
      }
      if (n.kind == Kind::kRequest || n.kind == Kind::kTrainStep) {
        n.owner = n.root = i;
      } else if (n.kind != Kind::kNone) {
        n.owner = i;
        n.root = nodes_[above].root;
      } else if (above >= 0) {
        n.owner = above;
        n.root = nodes_[above].root;
      }
    }
    // A priced stage's calls are its request's denoising steps, numbered in order.
    std::map<std::pair<std::int64_t, std::uint32_t>, std::int64_t> calls;
    for (std::int64_t i : order) {
      Node& n = nodes_[i];
      if (n.kind == Kind::kStage && is_priced_stage(t_.str(n.row->name))) {
        n.step_index = calls[{n.root, n.row->name}]++;
      }
    }
    order_ = std::move(order);
  }

  // The innermost of the thread's ranges holding `ts`, by a walk from the last range that
  // started at or before it.
  std::int64_t innermost(std::int64_t tid, double ts) const {
    auto range = by_tid_.find(tid);
    if (range == by_tid_.end()) return -1;
    const std::vector<std::int64_t>& v = range->second;
    auto it = std::upper_bound(v.begin(), v.end(), ts,
                               [&](double x, std::int64_t i) { return x < nodes_[i].row->ts; });
    if (it == v.begin()) return -1;
    for (std::int64_t i = *(it - 1); i >= 0; i = nodes_[i].parent) {
      if (nodes_[i].row->end() >= ts) return i;
    }
    return -1;
  }

  void attribute_launches() {
    for (std::int64_t i : order_) by_tid_[nodes_[i].row->tid].push_back(i);
    std::vector<std::int64_t> roots;
    for (std::int64_t i : order_) {
      if (nodes_[i].owner == i && nodes_[i].root == i) roots.push_back(i);
    }
    std::sort(roots.begin(), roots.end(), [&](std::int64_t a, std::int64_t b) {
      return nodes_[a].row->ts < nodes_[b].row->ts;
    });
    // The device rows by correlation: their positions (4 bytes each), sorted, for each launch
    // call to find its own.
    std::vector<std::uint32_t> ran;
    std::size_t device_rows = 0;
    for (const Row& r : t_.rows) device_rows += r.device && r.correlation != -1 ? 1 : 0;
    ran.reserve(device_rows);
    for (std::size_t i = 0; i < t_.rows.size(); ++i) {
      const Row& r = t_.rows[i];
      if (r.device && r.correlation != -1) ran.push_back(static_cast<std::uint32_t>(i));
    }
    auto correlation = [&](std::uint32_t i) { return t_.rows[i].correlation; };
    std::stable_sort(ran.begin(), ran.end(), [&](std::uint32_t a, std::uint32_t b) {
      return correlation(a) < correlation(b);
    });
    for (const Row& r : t_.rows) {
      if (r.device || r.correlation == -1) continue;
      auto lo =
          std::lower_bound(ran.begin(), ran.end(), r.correlation,
                           [&](std::uint32_t i, std::int64_t c) { return correlation(i) < c; });
      auto hi =
          std::upper_bound(lo, ran.end(), r.correlation,
                           [&](std::int64_t c, std::uint32_t i) { return c < correlation(i); });
      if (lo == hi) continue;
      std::int64_t at = innermost(r.tid, r.ts);
      if (at < 0 || nodes_[at].owner < 0) at = by_time(roots, r.ts);  // another thread (autograd)
      if (at < 0) continue;
      for (std::int64_t n = nodes_[at].owner; n >= 0;) {
        Node& node = nodes_[n];
        node.device.insert(node.device.end(), lo, hi);
        n = node.parent >= 0 ? nodes_[node.parent].owner : -1;
      }
    }
  }

  // A launch on a thread without ranges: the innermost of vxperf's ranges on its root's thread.
  std::int64_t by_time(const std::vector<std::int64_t>& roots, double ts) const {
    auto it = std::upper_bound(roots.begin(), roots.end(), ts,
                               [&](double x, std::int64_t i) { return x < nodes_[i].row->ts; });
    if (it == roots.begin()) return -1;
    const Node& root = nodes_[*(it - 1)];
    if (root.row->end() < ts) return -1;
    const std::int64_t at = innermost(root.row->tid, ts);
    return at >= 0 && nodes_[at].owner >= 0 ? at : *(it - 1);
  }

  // The split of one range's device span (microseconds until the end). A row of negative
  // duration (HTA's rounding) counts as one of none, so that no part goes negative.
  WaterfallRow split(const Node& n) const {
    WaterfallRow w;
    w.count = 1;
    std::vector<Interval> all, comp, comm, mem;
    std::vector<const Row*> rows;
    for (std::uint32_t i : n.device) rows.push_back(&t_.rows[i]);
    // In order of start, rows starting together in file order (the row that ends a gap, whose
    // launch says its cause, is then always the same one).
    std::sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) {
      return a->ts != b->ts ? a->ts < b->ts : a->index < b->index;
    });
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    for (const Row* r : rows) {
      all.push_back({r->ts, std::max(r->ts, r->end())});
      switch (types_[r->name]) {
        case KernelType::kComputation:
          comp.push_back(all.back());
          break;
        case KernelType::kCommunication:
          comm.push_back(all.back());
          break;
        case KernelType::kMemory:
          mem.push_back(all.back());
          break;
        case KernelType::kOther:
          break;
      }
    }
    if (rows.empty()) return w;
    const std::vector<Interval> u = union_of(all);
    const double span = u.back().end - u.front().begin;
    std::vector<Interval> cc = comp;
    cc.insert(cc.end(), comm.begin(), comm.end());
    std::vector<Interval> mcc = cc;
    mcc.insert(mcc.end(), mem.begin(), mem.end());
    const double comp_us = length(union_of(comp));
    const double cc_us = length(union_of(cc));
    const double mcc_us = length(union_of(mcc));
    const double busy_us = length(u);
    // Gaps of the union, each by the row that ends it.
    double host = 0, kernel = 0, other = 0;
    std::size_t next = 0;
    for (std::size_t g = 1; g < u.size(); ++g) {
      const double gap = u[g].begin - u[g - 1].end;
      while (next < rows.size() && rows[next]->ts < u[g].begin) ++next;
      const Row* ender = next < rows.size() ? rows[next] : nullptr;
      const Row* launch = ender != nullptr ? t_.row_at(ender->partner) : nullptr;
      if (launch != nullptr && launch->ts > u[g - 1].end) {
        host += gap;
      } else if (gap < 30) {
        kernel += gap;
      } else {
        other += gap;
      }
    }
    constexpr double kS = 1e-6;
    w.span_s = span * kS;
    w.kernel_excess_s = comp_us * kS;
    w.exposed_comm_s = (cc_us - comp_us) * kS;
    w.memory_s = (mcc_us - cc_us) * kS;
    w.other_s = (busy_us - mcc_us) * kS;
    w.idle_host_wait_s = host * kS;
    w.idle_kernel_wait_s = kernel * kS;
    w.idle_other_s = other * kS;
    return w;
  }

  // The record of a request, or the window of a step, that holds the root range `root`.
  const Records::Request* request_record(const Node& root) const {
    auto it = records_.requests.find({t_.rank, root.number});
    return it == records_.requests.end() ? nullptr : &it->second;
  }
  const Records::Window* window_record(const Node& root) const {
    auto windows = records_.windows.find(t_.rank);
    if (windows == records_.windows.end()) return nullptr;
    for (const Records::Window& w : windows->second) {
      if (root.number >= w.first && root.number <= w.last) return &w;
    }
    return nullptr;
  }

  // What the records say the range should take at the peak; absent when they do not.
  std::optional<std::pair<double, double>> ideal(const Node& n) const {
    const Node& root = nodes_[n.root];
    if (root.kind == Kind::kRequest) {
      const Records::Request* r = request_record(root);
      if (r == nullptr || !r->priced) return std::nullopt;
      if (n.kind == Kind::kRequest) return std::make_pair(r->ideal_s, r->flops);
      if (n.step_index < 0 || r->calls == 0) return std::nullopt;
      const double calls = static_cast<double>(r->calls);
      return std::make_pair(r->ideal_s / calls, r->flops / calls);
    }
    const Records::Window* w = window_record(root);
    if (w == nullptr || !w->priced) return std::nullopt;
    if (n.kind == Kind::kTrainStep) return std::make_pair(w->ideal_step_s, w->flops_step);
    if (n.kind != Kind::kPhase || w->coef <= 0) return std::nullopt;
    const std::string_view name = t_.str(n.row->name);
    // The forward is one of the coefficient's passes, the backward the rest.
    const bool forward = name == "fwd" || name == "model_call";
    const double share = forward ? 1 / w->coef : name == "bwd" ? (w->coef - 1) / w->coef : 0;
    if (share == 0) return std::nullopt;
    return std::make_pair(w->ideal_step_s * share, w->flops_step * share);
  }

  // Which of the trace's requests and steps a record holds (each file's count) and prices, and
  // which none holds.
  void join(RankWaterfall& out) const {
    std::set<std::int64_t> requests, steps;
    // A request's record or a step's window: counted in its file, or the root's number kept.
    auto count = [&out](const auto* record, std::set<std::int64_t>& without, const Node& root) {
      if (record == nullptr) {
        without.insert(root.number);
        return;
      }
      ++out.matched[record->file];
      if (record->priced) ++out.priced[record->file];
    };
    for (std::int64_t i : order_) {
      const Node& n = nodes_[i];
      if (n.root != i) continue;
      if (n.kind == Kind::kRequest) {
        count(request_record(n), requests, n);
      } else {
        count(window_record(n), steps, n);
      }
    }
    out.requests_without_record.assign(requests.begin(), requests.end());
    out.steps_without_record.assign(steps.begin(), steps.end());
  }

  static void add(WaterfallRow& into, const WaterfallRow& w) {
    into.count += w.count;
    into.host_s += w.host_s;
    into.span_s += w.span_s;
    into.kernel_excess_s += w.kernel_excess_s;
    into.exposed_comm_s += w.exposed_comm_s;
    into.memory_s += w.memory_s;
    into.other_s += w.other_s;
    into.idle_host_wait_s += w.idle_host_wait_s;
    into.idle_kernel_wait_s += w.idle_kernel_wait_s;
    into.idle_other_s += w.idle_other_s;
    if (into.ideal_s && w.ideal_s) {
      *into.ideal_s += *w.ideal_s;
    } else {
      into.ideal_s.reset();
    }
    if (into.flops && w.flops) {
      *into.flops += *w.flops;
    } else {
      into.flops.reset();
    }
  }

  std::vector<WaterfallRow> aggregate(std::vector<TraceRange>& ranges) {
    types_ = types_of(t_);
    std::map<std::tuple<int, std::string, std::int64_t>, WaterfallRow> rows;
    std::unordered_map<std::int64_t, std::int64_t> listed;  // node -> its place in `ranges`
    auto put = [&](int order, const std::string& range, const char* kind, std::int64_t index,
                   WaterfallRow w) {
      if (keep_ranges_) ranges.back().keys.push_back({order, range, kind, index});
      w.range = range;
      w.kind = kind;
      w.step_index = index;
      auto [it, fresh] = rows.try_emplace({order, range, index}, w);
      if (!fresh) add(it->second, w);
    };
    for (std::int64_t i : order_) {
      const Node& n = nodes_[i];
      if (n.owner != i) continue;
      WaterfallRow w = split(n);
      w.host_s = std::max(0.0, n.row->dur) * 1e-6;
      if (auto priced = ideal(n)) {
        w.flops = priced->second;
        // Without device work there is no span to split (a CPU-only profile): no ideal in it.
        if (!n.device.empty()) w.ideal_s = priced->first;
      }
      if (keep_ranges_) {
        // Parents come first in order_, so a parent is listed before its children.
        TraceRange r;
        r.row = n.pos;
        const std::int64_t up = n.parent >= 0 ? nodes_[n.parent].owner : -1;
        r.parent = up >= 0 ? listed.at(up) : -1;
        r.root = n.root == i ? static_cast<std::int64_t>(ranges.size()) : listed.at(n.root);
        r.request = nodes_[n.root].kind == Kind::kRequest;
        r.step_index = n.step_index;
        r.device = n.device;
        std::sort(r.device.begin(), r.device.end());
        r.device.erase(std::unique(r.device.begin(), r.device.end()), r.device.end());
        r.ideal_s = w.ideal_s;
        listed[i] = static_cast<std::int64_t>(ranges.size());
        ranges.push_back(std::move(r));
      }
      const std::string name(t_.str(n.row->name));
      const int order = static_cast<int>(n.kind);
      switch (n.kind) {
        case Kind::kRequest:
          put(order, "request", "request", -1, w);
          break;
        case Kind::kTrainStep:
          put(order, "step", "train_step", -1, w);
          break;
        case Kind::kStage:
          if (n.step_index >= 0) put(order, name, "denoising_step", n.step_index, w);
          put(order, name, "stage", -1, w);
          break;
        default:
          put(order, name, n.kind == Kind::kMicroStep ? "micro_step" : "phase", -1, w);
          break;
      }
    }
    std::vector<WaterfallRow> out;
    for (auto& [key, w] : rows) {
      // Computation beyond the ideal; all of it when the FLOPs are unknown.
      if (w.ideal_s) {
        w.kernel_excess_s -= *w.ideal_s;
        if (w.span_s > 0) w.mfu = *w.ideal_s / w.span_s;
      }
      out.push_back(std::move(w));
    }
    return out;
  }

  const KinetoTrace& t_;
  const Records& records_;
  const bool keep_ranges_;
  std::set<std::string, std::less<>> known_stages_;  // the stage table's and the trace's
  std::vector<Node> nodes_;
  std::vector<std::int64_t> order_;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> by_tid_;
  std::vector<KernelType> types_;
};

class RecordsInto : public analysis::RecordHandler {
 public:
  RecordsInto(Records& r, std::uint32_t file) : r_(r), file_(file) {
    for (std::size_t i = 0; i < r.stage_names.size(); ++i) {
      stage_ids_.emplace(r.stage_names[i], static_cast<std::uint32_t>(i));
    }
  }
  void request(const RequestRecord& q) override {
    Records::Request r;
    r.file = file_;
    for (const StageSummary& s : q.stages) {
      auto [it, fresh] =
          stage_ids_.try_emplace(s.name, static_cast<std::uint32_t>(r_.stage_names.size()));
      if (fresh) r_.stage_names.push_back(s.name);
      r.stages.push_back(it->second);
    }
    if (q.dit && q.dit->mfu) {
      double priced_s = 0;
      for (const StageSummary& s : q.stages) {
        if (!is_priced_stage(s.name)) continue;
        priced_s += s.total_ms / 1000;
        r.calls += s.count;
      }
      r.priced = true;
      r.ideal_s = *q.dit->mfu * priced_s;
      r.flops = q.dit->tflops * 1e12 * priced_s;
    }
    r_.requests[{q.rank, q.req}] = std::move(r);
  }
  void window(const TrainWindowRecord& w) override {
    Records::Window out;
    out.file = file_;
    out.first = w.step_first;
    out.last = w.step_last;
    if (w.throughput && w.throughput->priced && w.throughput->peak_tflops) {
      const TrainThroughput& t = *w.throughput;
      out.priced = true;
      out.flops_step = t.flops_per_step * t.dp;
      out.ideal_step_s = out.flops_step / (*t.peak_tflops * 1e12);
      out.coef = t.flops_coef;
    }
    r_.windows[w.rank].push_back(out);
  }
  void warning(const std::string&) override {}

 private:
  Records& r_;
  std::uint32_t file_;
  std::unordered_map<std::string, std::uint32_t> stage_ids_;
};

}  // namespace

Records load_records(const std::vector<std::string>& given, const std::vector<std::string>& named,
                     const std::vector<std::string>& trace_files,
                     std::vector<std::string>& problems) {
  Records out;
  std::vector<std::string> candidates = given;
  bool said = !given.empty();  // a file the user or the trace chose: its problems are said
  if (candidates.empty()) {
    std::error_code ec;
    for (const std::string& f : std::set<std::string>(named.begin(), named.end())) {
      if (fs::exists(f, ec)) candidates.push_back(f);
    }
    said = !candidates.empty();
  }
  if (candidates.empty()) {
    std::set<std::string> dirs;
    for (const std::string& f : trace_files) dirs.insert(fs::path(f).parent_path().string());
    for (const std::string& d : dirs) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(d.empty() ? "." : d, ec)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file(ec) && name.find(".jsonl") != std::string::npos) {
          candidates.push_back(e.path().string());
        }
      }
    }
    std::sort(candidates.begin(), candidates.end());
  }
  analysis::ReadOptions options;
  options.skip_bad_lines = true;
  options.threads = 1;
  for (const std::string& f : candidates) {
    const auto file = static_cast<std::uint32_t>(out.files.size());
    RecordsInto into(out, file);
    try {
      analysis::stream_record_files({f}, into, options);
      out.files.push_back(f);
    } catch (const std::exception& e) {
      if (said) problems.push_back(std::string(e.what()));
      // What it gave before it failed is not the next file's.
      for (auto it = out.requests.begin(); it != out.requests.end();) {
        it = it->second.file == file ? out.requests.erase(it) : std::next(it);
      }
      for (auto& [rank, windows] : out.windows) {
        windows.erase(std::remove_if(windows.begin(), windows.end(),
                                     [&](const Records::Window& w) { return w.file == file; }),
                      windows.end());
      }
    }
  }
  return out;
}

RankWaterfall waterfall_of(const KinetoTrace& trace, const Records& records, bool keep_ranges) {
  return Builder(trace, records, keep_ranges).build();
}

std::vector<std::pair<std::int64_t, std::int64_t>> runs_of(
    const std::vector<std::int64_t>& sorted) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (std::int64_t n : sorted) {
    if (!runs.empty() && n == runs.back().second + 1) {
      runs.back().second = n;
    } else {
      runs.emplace_back(n, n);
    }
  }
  return runs;
}

std::string numbered_runs(const std::vector<std::int64_t>& requests,
                          const std::vector<std::int64_t>& steps, std::size_t max_runs) {
  std::string out;
  auto say = [&](const char* one, const char* many, const std::vector<std::int64_t>& numbers) {
    if (numbers.empty()) return;
    const auto runs = runs_of(numbers);
    if (!out.empty()) out += ", ";
    out += numbers.size() == 1 ? one : many;
    for (std::size_t i = 0; i < runs.size() && i < max_runs; ++i) {
      out += i == 0 ? " " : ", ";
      out += std::to_string(runs[i].first);
      if (runs[i].second != runs[i].first) out += "-" + std::to_string(runs[i].second);
    }
    if (runs.size() > max_runs) {
      out += " and " + std::to_string(runs.size() - max_runs) + " more runs";
    }
  };
  say("request", "requests", requests);
  say("step", "steps", steps);
  return out;
}

}  // namespace vxperf::explain
