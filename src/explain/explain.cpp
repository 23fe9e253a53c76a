// explain_traces(): the files found, each read by a worker thread, the profiler-step strings of
// every rank gathered (HTA's window is global in that one respect), then each rank's window and
// analyses, again a worker per file, and its waterfall joined with the records (explain_parts);
// then the job's step over the ranks (merge_parts), which `--merge` takes partials to.
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

#include "explain/explain_part.h"
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

ExplainParts explain_parts(const std::vector<std::string>& paths, const ExplainOptions& options,
                           bool partial) {
  if (partial && options.critical_path) {
    // Its times are shifted by the earliest start of every rank, and its symbols are every rank's.
    throw std::invalid_argument(
        "the critical path takes every rank's trace at once: it cannot be split into partials");
  }
  const std::vector<std::string> files = trace_files(paths);
  ExplainParts out;
  if (options.replay) {
    out.replay = true;
    for (const WhatIfSpec& w : options.replay->what_ifs) out.what_ifs.push_back(w.spec);
  }
  out.traces.resize(files.size());
  std::vector<std::optional<KinetoTrace>> traces(files.size());
  ReadOptions read;
  // Both graphs walk every CPU op: HTA's reads them whole, the replay apart from the rows the
  // analyses read (ReadOptions::plain_rows), when it is alone.
  read.every_row = options.critical_path.has_value();
  read.plain_rows = options.replay.has_value() && !read.every_row;
  parallel_for(files.size(), options.threads, [&](std::size_t i) {
    out.traces[i].file = files[i];
    try {
      traces[i] = read_kineto_trace(files[i], read);
    } catch (const TraceError& e) {
      out.traces[i].error = e.what();
    } catch (const std::bad_alloc&) {
      out.traces[i].error = "out of memory while reading it";
    }
  });
  // One file per rank: the first claim of each is analysed (a partial analyses every trace: the
  // job's first claim of a rank may be in it whatever it holds besides).
  std::map<int, std::size_t> by_rank;
  std::set<std::string> steps;
  std::vector<std::size_t> analysed;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!traces[i]) continue;
    TracePart& part = out.traces[i];
    const KinetoTrace& t = *traces[i];
    part.warnings = t.warnings;
    part.rank = t.rank;
    part.rank_found = t.rank_found;
    // Two say all the job's window takes from them (whether the job holds two or more).
    const std::set<std::string> s = profiler_step_strings(t);
    for (const std::string& name : s) {
      if (part.step_strings.size() == 2) break;
      part.step_strings.push_back(name);
    }
    const bool first = by_rank.emplace(t.rank, i).second;
    if (first) steps.insert(part.step_strings.begin(), part.step_strings.end());
    if (!first && !partial) {
      traces[i].reset();
      continue;
    }
    part.analysed = true;
    analysed.push_back(i);
  }
  // The records the ranks name, else those beside the traces analysed.
  std::vector<std::string> named, read_files;
  for (const auto& [rank, i] : by_rank) {
    if (!traces[i]->records_file.empty()) named.push_back(traces[i]->records_file);
    read_files.push_back(files[i]);
  }
  const Records records = load_records(options.records, named, read_files, out.records_problems);
  out.records_files = records.files;
  CriticalPathContext context;
  if (options.critical_path) {
    std::vector<const KinetoTrace*> all;
    for (const auto& [rank, i] : by_rank) all.push_back(&*traces[i]);
    context = critical_path_context(all, options.critical_path->annotation);
  }
  parallel_for(analysed.size(), options.threads, [&](std::size_t k) {
    const KinetoTrace& t = *traces[analysed[k]];
    TracePart& part = out.traces[analysed[k]];
    auto analyse = [&](bool job_steps) {  // the window is gone before the waterfall is made
      WindowedAnalysis a;
      const RankWindow w = apply_window(t, job_steps);
      a.rank = analyse_rank(w, a.problems);
      const std::set<std::int64_t> kept = profiler_steps(w);
      a.rank.steps.assign(kept.begin(), kept.end());
      if (options.critical_path) {
        a.rank.critical_path = hta_critical_path(w, *options.critical_path, context);
        const RankCriticalPath& cp = *a.rank.critical_path;
        for (const CriticalPathInstance& i : cp.instances) {
          if (i.hta != "ok") a.problems.push_back(critical_path_problem(cp, i));
        }
        if (cp.instances_not_analysed > 0) {
          a.problems.push_back(
              "critical path of \"" + cp.annotation +
              "\": " + std::to_string(cp.instances_not_analysed) + " instances past the first " +
              std::to_string(cp.instances.size()) +
              " not analysed (name one, or a range: --critical-path=" + cp.annotation + ":A-B)");
        }
      }
      return a;
    };
    // Alone, a trace of two step strings or more knows the job's window; one of fewer does not.
    const bool own_steps = part.step_strings.size() >= 2;
    const bool job_steps = partial ? own_steps : steps.size() >= 2;
    const bool filters = t.host_rows() > 0;
    if (filters && job_steps) part.filtered = analyse(true);
    if (!filters || !job_steps) part.whole = analyse(false);
    // A partial's trace of fewer: the job's traces may hold two together, or not.
    if (partial && filters && !own_steps) part.filtered = analyse(true);
    RankWaterfall join = waterfall_of(t, records, options.replay.has_value());
    part.waterfall = std::move(join.rows);
    part.requests_without_record = std::move(join.requests_without_record);
    part.steps_without_record = std::move(join.steps_without_record);
    part.matched = std::move(join.matched);
    part.priced = std::move(join.priced);
    if (options.replay) {
      // The window's count of plain host rows is done with: its starts go before the graph.
      std::vector<double>().swap(traces[analysed[k]]->plain_host.later);
      part.replay = replay_ranges(t, join.ranges, *options.replay, part.replay_problems);
    }
    traces[analysed[k]].reset();  // its rows are not needed any more
  });
  return out;
}

Explanation merge_parts(std::vector<ExplainParts> parts) {
  Explanation out;
  if (parts.empty()) return out;
  for (const ExplainParts& p : parts) {
    if (p.replay != parts[0].replay || p.what_ifs != parts[0].what_ifs) {
      throw std::invalid_argument(
          "the partials were made with different --replay/--what-if: make them alike");
    }
  }
  // Every trace in file order, with the parts it came from.
  std::vector<std::pair<std::size_t, TracePart*>> all;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (TracePart& t : parts[p].traces) all.emplace_back(p, &t);
  }
  // One file per rank: a second claim of a rank is said and left out.
  std::map<int, std::size_t> by_rank;
  std::set<std::string> steps;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const TracePart& t = *all[i].second;
    if (!t.error.empty()) {
      out.problems.push_back(t.file + ": " + t.error);
      continue;
    }
    for (const std::string& w : t.warnings) out.problems.push_back(t.file + ": " + w);
    if (!t.rank_found && all.size() > 1) {
      out.problems.push_back(t.file + ": no \"rank\" (distributedInfo) in it: taken as rank 0");
    }
    auto [it, inserted] = by_rank.emplace(t.rank, i);
    if (!inserted) {
      out.problems.push_back(t.file + ": rank " + std::to_string(t.rank) + " again (" +
                             all[it->second].second->file + " has it): not analysed");
      continue;
    }
    if (!t.analysed) throw std::invalid_argument(t.file + ": its partial holds no analysis of it");
    steps.insert(t.step_strings.begin(), t.step_strings.end());
  }
  // The records the ranks were joined with: the same in every part that holds a rank analysed.
  const ExplainParts* joined = nullptr;
  std::string joined_by;  // a trace of it
  for (const auto& [rank, i] : by_rank) {
    const ExplainParts& p = parts[all[i].first];
    if (joined == nullptr) {
      joined = &p;
      joined_by = all[i].second->file;
    } else if (p.records_files != joined->records_files ||
               p.records_problems != joined->records_problems) {
      throw std::invalid_argument("the partials were joined with different records (" + joined_by +
                                  "'s and " + all[i].second->file +
                                  "'s): give each the same --records");
    }
  }
  if (joined == nullptr) joined = &parts[0];
  out.problems.insert(out.problems.end(), joined->records_problems.begin(),
                      joined->records_problems.end());
  out.records_files = joined->records_files;
  const std::vector<std::string>& record_files = out.records_files;
  const bool job_steps = steps.size() >= 2;
  // The join with the records: the ranges no record holds, per rank; the files that priced some
  // range, and what is said of the others.
  std::vector<std::int64_t> matched(record_files.size(), 0), priced(record_files.size(), 0);
  for (const auto& [rank, i] : by_rank) {
    TracePart& t = *all[i].second;
    std::optional<WindowedAnalysis>& window = job_steps && t.filtered ? t.filtered : t.whole;
    if (!window) throw std::invalid_argument(t.file + ": its partial holds not the job's window");
    RankExplanation r = std::move(window->rank);
    r.rank = t.rank;
    r.file = t.file;
    r.waterfall = std::move(t.waterfall);
    r.replay = std::move(t.replay);
    for (const std::string& p : window->problems) out.problems.push_back(r.file + ": " + p);
    for (const std::string& p : t.replay_problems) out.problems.push_back(r.file + ": " + p);
    if (t.matched.size() != record_files.size() || t.priced.size() != record_files.size()) {
      throw std::invalid_argument(t.file + ": its partial's records do not match its join");
    }
    for (std::size_t f = 0; f < record_files.size(); ++f) {
      matched[f] += t.matched[f];
      priced[f] += t.priced[f];
    }
    if (!record_files.empty()) {
      r.requests_without_record = runs_of(t.requests_without_record);
      r.steps_without_record = runs_of(t.steps_without_record);
      if (!t.requests_without_record.empty() || !t.steps_without_record.empty()) {
        std::string in;
        for (const std::string& f : record_files) in += (in.empty() ? "" : ", ") + f;
        out.problems.push_back(
            r.file + ": " + numbered_runs(t.requests_without_record, t.steps_without_record) +
            ": no record in " + in + " (rank " + std::to_string(r.rank) + "): no FLOPs for them");
      }
    }
    out.ranks.push_back(std::move(r));
  }
  // With no trace analysed, what each records file lacked says nothing; nor with CPU-only
  // profiles alone, whose ranges give host time and no waterfall for FLOPs to price.
  bool device_rows = false;
  for (const RankExplanation& r : out.ranks) device_rows = device_rows || r.has_device_rows;
  for (std::size_t f = 0; f < record_files.size() && !out.ranks.empty(); ++f) {
    if (priced[f] > 0) {
      out.flops_from.push_back(record_files[f]);
    } else if (!device_rows) {
      continue;
    } else if (matched[f] > 0) {
      out.problems.push_back(record_files[f] + ": its records hold " + std::to_string(matched[f]) +
                             " of the traces' requests and steps but price none of them (no "
                             "FLOPs in them, or no peak to price them at: record with "
                             "VIDEOX_PERF_PEAK_TFLOPS=auto on a CPU or a GPU without a "
                             "datasheet peak): no FLOPs from it");
    } else {
      out.problems.push_back(record_files[f] +
                             ": none of its records is of a request or step in the traces (by "
                             "rank and number): no FLOPs from it");
    }
  }
  double total = 0;
  for (RankExplanation& r : out.ranks) {
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
  return out;
}

Explanation explain_traces(const std::vector<std::string>& paths, const ExplainOptions& options) {
  std::vector<ExplainParts> parts;
  parts.push_back(explain_parts(paths, options, false));
  return merge_parts(std::move(parts));
}

std::string explain_partial(const std::vector<std::string>& paths, const ExplainOptions& options) {
  return partial_json(explain_parts(paths, options, true));
}

Explanation merge_partials(const std::vector<std::pair<std::string, std::string>>& documents) {
  std::vector<ExplainParts> parts;
  for (const auto& [name, text] : documents) {
    try {
      parts.push_back(read_partial(text));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(name + ": " + e.what());
    }
  }
  return merge_parts(std::move(parts));
}

}  // namespace vxperf::explain
