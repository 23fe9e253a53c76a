// explain_traces(): the files found, each read by a worker thread, the profiler-step strings of
// every rank gathered (HTA's window is global in that one respect), then each rank's window and
// analyses, again a worker per file; the waterfall joined with the records last.
#include "vxperf/explain.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "explain/hta_analysis.h"
#include "explain/hta_critical_path.h"
#include "explain/kineto_trace.h"
#include "explain/range_replay.h"
#include "explain/waterfall.h"

namespace vxperf::explain {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_trace_name(const std::string& name) {
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

std::vector<std::string> trace_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        if (entry.is_regular_file(ec) && is_trace_name(entry.path().filename().string())) {
          found.push_back(entry.path().string());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      throw std::invalid_argument(p + ": no such file or directory");
    }
  }
  return files;
}

// Runs job(i) for every i below n on at most `threads` threads.
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& job) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, n));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) job(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

// One line for an instance whose path HTA does not give.
std::string critical_path_problem(const RankCriticalPath& cp, const CriticalPathInstance& i) {
  std::string which = cp.annotation.empty()
                          ? std::string("the whole trace")
                          : "\"" + cp.annotation + "\" instance " + std::to_string(i.first) +
                                (i.last != i.first ? "-" + std::to_string(i.last) : std::string());
  const std::string what = i.hta == "None"         ? "HTA returns None"
                           : i.hta == "False"      ? "HTA returns success False"
                           : i.hta == "unmodelled" ? "vxperf does not model it"
                                                   : "HTA raises";
  return "critical path of " + which + ": " + what + ": " + i.why;
}

}  // namespace

Explanation explain_traces(const std::vector<std::string>& paths, const ExplainOptions& options) {
  const std::vector<std::string> files = trace_files(paths);
  Explanation out;
  std::vector<std::optional<KinetoTrace>> traces(files.size());
  std::vector<std::string> problems(files.size());
  ReadOptions read;
  // Both graphs walk every CPU op.
  read.every_row = options.critical_path.has_value() || options.replay.has_value();
  parallel_for(files.size(), options.threads, [&](std::size_t i) {
    try {
      traces[i] = read_kineto_trace(files[i], read);
    } catch (const TraceError& e) {
      problems[i] = files[i] + ": " + e.what();
    } catch (const std::bad_alloc&) {
      problems[i] = files[i] + ": out of memory while reading it";
    }
  });
  // One file per rank: a second claim of a rank is said and left out.
  std::map<int, std::size_t> by_rank;
  std::set<std::string> steps;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!problems[i].empty()) {
      out.problems.push_back(problems[i]);
      continue;
    }
    KinetoTrace& t = *traces[i];
    for (const std::string& w : t.warnings) out.problems.push_back(t.file + ": " + w);
    if (!t.rank_found && files.size() > 1) {
      out.problems.push_back(t.file + ": no \"rank\" (distributedInfo) in it: taken as rank 0");
    }
    auto [it, inserted] = by_rank.emplace(t.rank, i);
    if (!inserted) {
      out.problems.push_back(t.file + ": rank " + std::to_string(t.rank) + " again (" +
                             files[it->second] + " has it): not analysed");
      traces[i].reset();
      continue;
    }
    std::set<std::string> s = profiler_step_strings(t);
    steps.insert(s.begin(), s.end());
  }
  std::vector<std::size_t> order;
  for (const auto& [rank, i] : by_rank) order.push_back(i);
  std::vector<RankExplanation> ranks(order.size());
  std::vector<std::set<std::int64_t>> rank_steps(order.size());
  std::vector<std::string> named;
  for (std::size_t i : order) {
    if (!traces[i]->records_file.empty()) named.push_back(traces[i]->records_file);
  }
  const Records records = load_records(options.records, named, files, out.problems);
  out.records_files = records.files;
  std::vector<std::vector<std::string>> rank_problems(order.size());
  std::vector<RankWaterfall> joins(order.size());
  CriticalPathContext context;
  if (options.critical_path) {
    std::vector<const KinetoTrace*> all;
    for (std::size_t i : order) all.push_back(&*traces[i]);
    context = critical_path_context(all, options.critical_path->annotation);
  }
  parallel_for(order.size(), options.threads, [&](std::size_t k) {
    const KinetoTrace& t = *traces[order[k]];
    {  // the window is gone before the waterfall is made
      const RankWindow w = apply_window(t, steps);
      ranks[k] = analyse_rank(w, rank_problems[k]);
      rank_steps[k] = profiler_steps(w);
      if (options.critical_path) {
        ranks[k].critical_path = hta_critical_path(w, *options.critical_path, context);
        const RankCriticalPath& cp = *ranks[k].critical_path;
        for (const CriticalPathInstance& i : cp.instances) {
          if (i.hta != "ok") rank_problems[k].push_back(critical_path_problem(cp, i));
        }
        if (cp.instances_not_analysed > 0) {
          rank_problems[k].push_back(
              "critical path of \"" + cp.annotation +
              "\": " + std::to_string(cp.instances_not_analysed) + " instances past the first " +
              std::to_string(cp.instances.size()) +
              " not analysed (name one, or a range: --critical-path=" + cp.annotation + ":A-B)");
        }
      }
    }
    joins[k] = waterfall_of(t, records, options.replay.has_value());
    ranks[k].waterfall = std::move(joins[k].rows);
    if (options.replay) {
      ranks[k].replay = replay_ranges(t, joins[k].ranges, *options.replay, rank_problems[k]);
      joins[k].ranges = {};
    }
    traces[order[k]].reset();  // its rows are not needed any more
  });
  // The join with the records: the ranges no record holds, per rank; the files that priced some
  // range, and what is said of the others.
  std::vector<std::int64_t> matched(records.files.size(), 0), priced(records.files.size(), 0);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    RankExplanation& r = ranks[k];
    for (const std::string& p : rank_problems[k]) out.problems.push_back(r.file + ": " + p);
    const RankWaterfall& j = joins[k];
    for (std::size_t f = 0; f < records.files.size(); ++f) {
      matched[f] += j.matched[f];
      priced[f] += j.priced[f];
    }
    if (records.files.empty()) continue;
    r.requests_without_record = runs_of(j.requests_without_record);
    r.steps_without_record = runs_of(j.steps_without_record);
    if (!j.requests_without_record.empty() || !j.steps_without_record.empty()) {
      std::string in;
      for (const std::string& f : records.files) in += (in.empty() ? "" : ", ") + f;
      out.problems.push_back(
          r.file + ": " + numbered_runs(j.requests_without_record, j.steps_without_record) +
          ": no record in " + in + " (rank " + std::to_string(r.rank) + "): no FLOPs for them");
    }
  }
  // With no trace analysed, what each records file lacked says nothing.
  for (std::size_t f = 0; f < records.files.size() && !ranks.empty(); ++f) {
    if (priced[f] > 0) {
      out.flops_from.push_back(records.files[f]);
    } else if (matched[f] > 0) {
      out.problems.push_back(records.files[f] + ": its records hold " + std::to_string(matched[f]) +
                             " of the traces' requests and steps but price none of them (no "
                             "FLOPs in them): no FLOPs from it");
    } else {
      out.problems.push_back(records.files[f] +
                             ": none of its records is of a request or step in the traces (by "
                             "rank and number): no FLOPs from it");
    }
  }
  double total = 0;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    RankExplanation& r = ranks[k];
    // Each rank's own steps in its window, as HTA lists them (ranks that ran more steps than
    // others keep more: each drops its own last one).
    r.steps.assign(rank_steps[k].begin(), rank_steps[k].end());
    for (const auto& [label, us] : r.kernel_types) {
      out.kernel_types[label] += us;
      total += us;
    }
  }
  for (auto it = out.kernel_types.begin(); it != out.kernel_types.end();) {
    if (it->second == 0) {
      it = out.kernel_types.erase(it);
      continue;
    }
    out.kernel_types_pct[it->first] = numpy_round((it->second / total) * 100, 1);
    ++it;
  }
  out.ranks = std::move(ranks);
  return out;
}

}  // namespace vxperf::explain
