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
#include "explain/kineto_trace.h"
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

}  // namespace

Explanation explain_traces(const std::vector<std::string>& paths, const ExplainOptions& options) {
  const std::vector<std::string> files = trace_files(paths);
  Explanation out;
  std::vector<std::optional<KinetoTrace>> traces(files.size());
  std::vector<std::string> problems(files.size());
  parallel_for(files.size(), options.threads, [&](std::size_t i) {
    try {
      traces[i] = read_kineto_trace(files[i]);
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
  parallel_for(order.size(), options.threads, [&](std::size_t k) {
    const KinetoTrace& t = *traces[order[k]];
    {  // the window is gone before the waterfall is made
      const RankWindow w = apply_window(t, steps);
      ranks[k] = analyse_rank(w);
      rank_steps[k] = profiler_steps(w);
    }
    ranks[k].waterfall = waterfall_of(t, records);
    traces[order[k]].reset();  // its rows are not needed any more
  });
  double total = 0;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    RankExplanation& r = ranks[k];
    // Each rank's own steps in its window, as HTA lists them (ranks that ran more steps than
    // others keep more: each drops its own last one).
    r.steps.assign(rank_steps[k].begin(), rank_steps[k].end());
    if (!r.has_device_rows) {
      out.problems.push_back(r.file + ": no device events (a CPU-only profile): host ranges only");
    }
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
