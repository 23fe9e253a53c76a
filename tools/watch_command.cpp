// `vxperf watch FILE...`: a live view of a running job from its records files. Each poll reads
// what every file gained since the last (a torn last line waits for its end), and redraws the
// latest window of every rank (step time, its largest phase, samples/s, MFU, ETA, stragglers by
// the core's rule) and, for servers, requests per minute and latency. Patterns are expanded
// again at each poll, so new ranks' files join; a file that shrinks or is replaced (truncated,
// rotated) is read again from its start. A training rank whose windows stop coming while the
// job's clock goes on is marked stalled (StallRule below). On a terminal: one screen, redrawn,
// until q or Ctrl-C; otherwise plain lines, one block per poll that brought records or changed
// which ranks are stalled.
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/records_reader.h"
#include "vxperf/report.h"
#include "vxperf/xrank.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kWatchCommand = {
    "watch", run,
    "usage: vxperf watch FILE|DIR|PATTERN... [--interval SECONDS] [--once]\n\n"
    "A live view of a running job from its records files (VIDEOX_PERF_JSON of every rank): the\n"
    "latest window per rank (steps, step time, its largest phase, samples/s, MFU, ETA,\n"
    "stragglers) and, for servers, requests per minute and e2e latency. New ranks' files join as\n"
    "they appear, for a quoted pattern ('runs/x.jsonl.rank*') and for the X.rankN names a shell\n"
    "expands it to, and in a folder (its *.jsonl* files, as report reads one); a truncated or\n"
    "rotated file is read again from its start; a torn last line\n"
    "waits for its end. On a terminal the\n"
    "view is redrawn until q or Ctrl-C; otherwise it prints plain lines for each poll that\n"
    "brought records or changed which ranks are stalled.\n\n"
    "A training rank is marked \"stalled (no window for T)\" when its last window is older than\n"
    "3x its usual interval between windows (the median of its last 16), and at least 30 s and\n"
    "3 --intervals, on the job's own clock: the records' ts, the newest across ranks, plus the\n"
    "time this watch has seen no newer window. So a rank far behind the others is stalled even\n"
    "with --once, and while following, ranks whose files stop growing become stalled (every rank,\n"
    "when the whole job stops). A rank with one window yet uses the other ranks' usual interval;\n"
    "serving ranks are never marked (an idle server writes nothing). A rank whose training ended\n"
    "(its final record, train_end, after its last window) is marked \"finished\", never "
    "stalled.\n\n"
    "  --interval S   seconds between polls (default 1)\n"
    "  --once         read what is there, print the view once and exit\n",
    "a live view of a running job's records files: step time, MFU, ETA, stragglers, requests"};

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// One followed file: where it was read to, and the start of a line not yet ended.
struct Followed {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  off_t offset = 0;
  std::int64_t lines = 0;  // whole lines read
  std::string partial;
};

using Clock = std::chrono::steady_clock;

struct RankView {
  std::optional<TrainWindowRecord> window;  // the latest
  std::int64_t windows = 0;
  std::deque<double> window_ts;  // the latest windows' timestamps, in the order read
  double last_ts = 0;            // the newest of them
  Clock::time_point seen;        // when this watch read the newest
  std::optional<double> ended;   // its final record's ts, when no window came after it
  std::int64_t requests = 0;
  std::deque<double> e2e;         // the latest requests' e2e times
  std::deque<double> request_ts;  // and their timestamps, for the rate
};

constexpr std::size_t kLatest = 200;

// When a training rank is stalled: its last window is older than kFactor x its usual interval
// between windows (the median of the intervals between its last kIntervals + 1 windows), and
// than kFloorS and kFloorPolls --intervals, measured on the job's clock: the newest window's ts
// across ranks, plus how long this watch has read no newer window of that rank. The records' own
// times (not this machine's clock, nor file mtimes) keep it testable and independent of when the
// watch started; the watch's own time lets a job whose ranks all stop show it.
struct StallRule {
  static constexpr double kFactor = 3.0;
  static constexpr double kFloorS = 30.0;
  static constexpr double kFloorPolls = 3.0;
  static constexpr std::size_t kIntervals = 16;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class View : public analysis::RecordHandler {
 public:
  void request(const RequestRecord& r) override {
    RankView& v = ranks_[r.rank];
    ++v.requests;
    v.e2e.push_back(r.e2e_s);
    v.request_ts.push_back(r.ts);
    if (v.e2e.size() > kLatest) v.e2e.pop_front();
    if (v.request_ts.size() > kLatest) v.request_ts.pop_front();
    ++fresh_;
  }
  void window(const TrainWindowRecord& w) override {
    RankView& v = ranks_[w.rank];
    ++v.windows;
    v.window_ts.push_back(w.ts);
    if (v.window_ts.size() > StallRule::kIntervals + 1) v.window_ts.pop_front();
    if (v.windows == 1 || w.ts >= v.last_ts) {
      v.last_ts = w.ts;
      v.seen = Clock::now();
    }
    if (!v.window || w.step_last >= v.window->step_last) v.window = w;
    if (v.ended && w.ts > *v.ended) v.ended.reset();  // a later attempt
    ++fresh_;
  }
  void end(const TrainEndRecord& e) override {
    RankView& v = ranks_[e.rank];
    if (!v.ended || e.ts > *v.ended) v.ended = e.ts;
    if (v.windows > 0 && e.ts < v.last_ts) v.ended.reset();  // an earlier attempt's
    ++fresh_;
  }
  void warning(const std::string& text) override { note(text); }

  void note(const std::string& text) {
    notes_.push_back(text);
    if (notes_.size() > 5) notes_.erase(notes_.begin());
    new_notes_.push_back(text);
  }
  std::int64_t take_fresh() {
    std::int64_t n = fresh_;
    fresh_ = 0;
    return n;
  }
  std::vector<std::string> take_new_notes() {
    std::vector<std::string> out;
    out.swap(new_notes_);
    return out;
  }

  // The stalled training ranks at `now` (StallRule) with how long each has had no window, with
  // polls `interval` seconds apart.
  std::map<int, double> stalled(Clock::time_point now, double interval) const {
    std::map<int, double> usual;
    std::optional<double> job_now;
    for (const auto& [rank, v] : ranks_) {
      if (v.windows == 0) continue;
      double since = std::chrono::duration<double>(now - v.seen).count();
      job_now = std::max(job_now.value_or(v.last_ts), v.last_ts + std::max(since, 0.0));
      std::vector<double> ts(v.window_ts.begin(), v.window_ts.end());
      std::sort(ts.begin(), ts.end());
      std::vector<double> gaps;
      for (std::size_t i = 1; i < ts.size(); ++i) gaps.push_back(ts[i] - ts[i - 1]);
      if (!gaps.empty()) usual[rank] = median(gaps);
    }
    std::map<int, double> out;
    if (!job_now) return out;
    std::vector<double> known;
    for (const auto& [rank, gap] : usual) known.push_back(gap);
    for (const auto& [rank, v] : ranks_) {
      if (v.windows == 0 || v.ended) continue;  // a finished rank writes nothing more
      auto it = usual.find(rank);
      if (it == usual.end() && known.empty()) continue;  // no interval known yet
      double gap = it != usual.end() ? it->second : median(known);
      double limit = std::max(
          {StallRule::kFactor * gap, StallRule::kFloorS, StallRule::kFloorPolls * interval});
      double silence = *job_now - v.last_ts;
      if (silence > limit) out[rank] = silence;
    }
    return out;
  }

  // The view as lines at `now`, polls `interval` seconds apart.
  std::vector<std::string> lines(std::size_t files, Clock::time_point now, double interval) const {
    std::vector<std::string> out;
    char buf[256];
    std::map<int, double> stalled_ranks = stalled(now, interval);
    std::snprintf(buf, sizeof buf, "vxperf watch: %zu files, %zu ranks", files, ranks_.size());
    out.emplace_back(buf);
    std::vector<RankTimes> times;
    for (const auto& [rank, v] : ranks_) {
      if (v.window) times.push_back({rank, v.window->step_s_p50, v.window->phases_s});
    }
    std::set<int> stragglers;
    std::map<int, std::string> where;
    std::optional<double> median;
    if (times.size() >= 2) {
      StragglerVerdict verdict = find_stragglers(times);
      median = verdict.median_s;
      for (std::size_t i = 0; i < verdict.stragglers.size(); ++i) {
        stragglers.insert(verdict.stragglers[i]);
        if (i < verdict.where.size()) where[verdict.stragglers[i]] = verdict.where[i];
      }
    }
    if (!times.empty()) {
      out.emplace_back("training (latest window per rank)");
      std::snprintf(buf, sizeof buf, "  %-5s %-13s %9s %-20s %10s %7s %9s  %s", "rank", "steps",
                    "step p50", "largest phase", "samples/s", "MFU", "ETA", "");
      out.emplace_back(buf);
      std::map<std::string, std::string> no_mfu;  // why -> the ranks it holds for
      for (const auto& [rank, v] : ranks_) {
        if (!v.window) continue;
        const TrainWindowRecord& w = *v.window;
        std::string phase = "-";
        double total = 0, largest = 0;
        for (const auto& [name, s] : w.phases_s) total += s;
        for (const auto& [name, s] : w.phases_s) {
          if (s > largest) {
            largest = s;
            phase = name;
          }
        }
        if (total > 0) {
          std::snprintf(buf, sizeof buf, "%s %.0f%%", phase.c_str(), 100.0 * largest / total);
          phase = buf;
        }
        std::string samples = "-", mfu = "n/a", eta = "-";
        if (w.throughput) {
          std::snprintf(buf, sizeof buf, "%.3f", w.throughput->samples_per_s);
          samples = buf;
          if (w.throughput->mfu) mfu = percent(*w.throughput->mfu);
        }
        if (!w.throughput || !w.throughput->mfu) {
          // As the report says it: a priced window without an MFU had no peak to take it over.
          std::string& ranks =
              no_mfu[analysis::mfu_missing_reason(w.throughput && w.throughput->priced)];
          ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
        }
        if (w.eta_s) eta = duration(*w.eta_s);
        std::string steps = std::to_string(w.step_first) + "-" + std::to_string(w.step_last);
        std::string mark = v.ended ? "finished" : "";
        if (auto it = stalled_ranks.find(rank); it != stalled_ranks.end()) {
          mark = "stalled (no window for " + duration(it->second) + ")";
        }
        if (stragglers.count(rank)) {
          mark += (mark.empty() ? "" : ", ") + std::string("straggler (") + where[rank] + ")";
        }
        std::snprintf(buf, sizeof buf, "  %-5d %-13s %8.3fs %-20s %10s %7s %9s  %s", rank,
                      steps.c_str(), w.step_s_p50, phase.c_str(), samples.c_str(), mfu.c_str(),
                      eta.c_str(), mark.c_str());
        out.emplace_back(buf);
      }
      std::string why;
      for (const auto& [reason, ranks] : no_mfu) {
        why += (why.empty() ? "  MFU n/a for rank" : "; for rank") +
               std::string(ranks.find(',') != std::string::npos ? "s " : " ") + ranks + " (" +
               reason + ")";
      }
      if (!why.empty()) out.push_back(why);
      if (median) {
        std::snprintf(buf, sizeof buf, "  median step %.3fs; stragglers: %zu", *median,
                      stragglers.size());
        out.emplace_back(buf);
      }
      if (!stalled_ranks.empty()) {
        std::string names;
        for (const auto& [rank, silence] : stalled_ranks) {
          names += (names.empty() ? "" : ", ") + std::to_string(rank);
        }
        out.emplace_back("  stalled: rank" + std::string(stalled_ranks.size() > 1 ? "s " : " ") +
                         names + " (no window for over 3x the usual interval, 30 s at least)");
      }
    }
    bool serving = false;
    for (const auto& [rank, v] : ranks_) serving = serving || v.requests > 0;
    if (serving) {
      out.emplace_back("serving (latest requests per rank)");
      std::snprintf(buf, sizeof buf, "  %-5s %9s %9s %9s %9s", "rank", "requests", "req/min",
                    "e2e p50", "e2e p95");
      out.emplace_back(buf);
      for (const auto& [rank, v] : ranks_) {
        if (v.requests == 0) continue;
        std::vector<double> e2e(v.e2e.begin(), v.e2e.end());
        std::sort(e2e.begin(), e2e.end());
        auto at = [&](double q) {
          return e2e[std::min(e2e.size() - 1, static_cast<std::size_t>(q * (e2e.size() - 1)))];
        };
        // Requests in the minute before the latest one's timestamp.
        double newest = v.request_ts.back();
        std::size_t in_minute = 0;
        for (double ts : v.request_ts) in_minute += ts > newest - 60.0 ? 1 : 0;
        double span = std::min(60.0, newest - v.request_ts.front());
        std::string rate = "-";
        if (span > 0) {
          std::snprintf(buf, sizeof buf, "%.1f",
                        static_cast<double>(in_minute) * 60.0 / std::max(span, 1e-9));
          rate = buf;
        }
        std::snprintf(buf, sizeof buf, "  %-5d %9lld %9s %8.3fs %8.3fs", rank,
                      static_cast<long long>(v.requests), rate.c_str(), at(0.5), at(0.95));
        out.emplace_back(buf);
      }
    }
    if (ranks_.empty()) out.emplace_back("no records yet");
    for (const auto& n : notes_) out.push_back("note: " + n);
    return out;
  }

 private:
  // A fraction with the digits a small one needs, as the report writes MFU: "45.1%", "0.47%",
  // "0.047%" (a CPU run's MFU against a GPU peak is no "0.0%").
  static std::string percent(double fraction) {
    char buf[32];
    const double p = fraction * 100.0, a = std::fabs(p);
    const char* format = a >= 1 || a == 0 || !std::isfinite(a) ? "%.1f%%"
                         : a >= 0.1                            ? "%.2f%%"
                                                               : "%.2g%%";
    std::snprintf(buf, sizeof buf, format, p);
    return buf;
  }

  static std::string duration(double s) {
    char buf[32];
    if (s < 120) {
      std::snprintf(buf, sizeof buf, "%.0fs", s);
    } else if (s < 7200) {
      std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
    } else {
      std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
    }
    return buf;
  }

  std::map<int, RankView> ranks_;
  std::vector<std::string> notes_, new_notes_;
  std::int64_t fresh_ = 0;
};

// The pattern of a rank file's siblings: "X.rank[0-9]*" for a name "X.rankN", else "". A shell
// expands 'X.rank*' to the files there now; this lets a rank whose file appears later join too.
std::string siblings_of(const std::string& path) {
  std::size_t at = path.rfind(".rank");
  if (at == std::string::npos || at + 5 == path.size()) return {};
  for (std::size_t i = at + 5; i < path.size(); ++i) {
    if (path[i] < '0' || path[i] > '9') return {};
  }
  return path.substr(0, at) + ".rank[0-9]*";
}

void add_matches(const std::string& pattern, std::vector<std::string>& out) {
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
}

// The files the arguments name now: each pattern expanded, a folder's records files (as report
// reads a folder), a plain name kept even before it exists, with its rank siblings when it is a
// rank file.
std::vector<std::string> expand(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a.find_first_of("*?[") != std::string::npos) {
      add_matches(a, out);
      continue;
    }
    struct stat st {};
    if (::stat(a.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      for (std::string& f : records_in_folder(a)) out.push_back(std::move(f));
      continue;
    }
    out.push_back(a);
    std::string siblings = siblings_of(a);
    if (!siblings.empty()) add_matches(siblings, out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Reads what `f` gained; complete lines go to the view.
void poll_file(Followed& f, View& view) {
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (f.ino != 0 && (st.st_ino != f.ino || st.st_dev != f.dev)) {
    view.note(f.path + ": replaced (rotated): read again from its start");
    f.offset = 0;
    f.lines = 0;
    f.partial.clear();
  } else if (st.st_size < f.offset) {
    view.note(f.path + ": truncated: read again from its start");
    f.offset = 0;
    f.lines = 0;
    f.partial.clear();
  }
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  if (st.st_size == f.offset) return;
  FILE* in = std::fopen(f.path.c_str(), "rb");
  if (in == nullptr) return;
  std::string text;
  if (::fseeko(in, f.offset, SEEK_SET) == 0) {
    char buf[1 << 16];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, n);
  }
  std::fclose(in);
  f.offset += static_cast<off_t>(text.size());
  text = f.partial + text;
  auto end = text.rfind('\n');
  if (end == std::string::npos) {
    f.partial = text;  // a line not yet ended (a writer mid-line): wait for the rest
    return;
  }
  f.partial = text.substr(end + 1);
  text.resize(end + 1);
  std::istringstream lines(text);
  analysis::ReadOptions options;
  options.skip_bad_lines = true;
  options.first_line = f.lines + 1;
  f.lines += static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n'));
  try {
    analysis::stream_records(lines, f.path, view, options);
  } catch (const analysis::InputError& e) {
    view.note(e.what());  // nothing but bad lines this time: said, and followed on
  }
}

// The terminal in raw-ish mode (no echo, a key at a time) while alive.
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // the alternate screen, no cursor
  }
  ~RawTerminal() {
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

// Waits up to `seconds` for a key; true when it was q. Once standard input has ended (or is
// none), it is no longer watched: the wait is a plain sleep (a signal ends either).
bool wait_for_quit(double seconds) {
  static bool input_open = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0 || g_stop) return false;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    int n = ::poll(&p, input_open ? 1 : 0, static_cast<int>(left));
    if (n < 0) return false;  // a signal: the caller looks at g_stop
    if (n == 0) continue;
    char c = 0;
    ssize_t got = ::read(STDIN_FILENO, &c, 1);
    if (got <= 0) {
      input_open = false;
      continue;
    }
    if (c == 'q' || c == 'Q') return true;
  }
}

int run(int argc, char** argv) {
  std::vector<std::string> files_named;
  double interval = 1.0;
  bool once = false;
  for (Args args(argc, argv); args.next();) {
    if (args.is("--interval")) {
      interval = args.number(0.05, 3600);
    } else if (args.is("--once")) {
      once = true;
    } else {
      files_named.push_back(args.operand());
    }
  }
  if (files_named.empty()) throw UsageError{"missing FILE (try --help)"};
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  bool terminal = !once && ::isatty(STDOUT_FILENO);
  std::map<std::string, Followed> files;
  View view;
  auto poll_all = [&] {
    for (const auto& path : expand(files_named)) {
      auto [it, added] = files.emplace(path, Followed{});
      if (added) it->second.path = path;
    }
    for (auto& [path, f] : files) poll_file(f, view);
  };
  if (!terminal) {
    // Plain lines: the view after each poll that brought records or notes, or changed which ranks
    // are stalled.
    std::set<int> last_stalled;
    for (;;) {
      poll_all();
      std::int64_t fresh = view.take_fresh();
      auto notes = view.take_new_notes();
      auto now = Clock::now();
      std::set<int> stalled;
      for (const auto& [rank, silence] : view.stalled(now, interval)) stalled.insert(rank);
      bool stalls_changed = stalled != last_stalled;
      last_stalled = stalled;
      if (fresh > 0 || !notes.empty() || stalls_changed || once) {
        std::string block;
        for (const auto& line : view.lines(files.size(), now, interval)) block += line + "\n";
        print(block + "\n");
        std::fflush(stdout);
      }
      if (once || g_stop) break;
      if (wait_for_quit(interval) || g_stop) break;
    }
    return 0;
  }
  RawTerminal raw;
  while (!g_stop) {
    poll_all();
    view.take_fresh();
    view.take_new_notes();
    std::string screen = "\x1b[H\x1b[2J";
    for (const auto& line : view.lines(files.size(), Clock::now(), interval)) {
      screen += line + "\n";
    }
    screen += "\n(q or Ctrl-C quits)\n";
    std::fputs(screen.c_str(), stdout);
    std::fflush(stdout);
    if (wait_for_quit(interval)) break;
  }
  return 0;
}

}  // namespace
}  // namespace vxperf::cli
