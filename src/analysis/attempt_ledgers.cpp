#include "analysis/attempt_ledgers.h"

#include <algorithm>

#include "base/strings.h"

namespace vxperf::analysis {

using internal::strprintf;

namespace {

double compute_s(const Ledger& l) {
  return l.productive_s + l.first_step_excess_s + l.slow_step_excess_s;
}

}  // namespace

void AttemptLedgers::place(Attempt& a, bool fresh, double ts, const Ledger& l, int world_size,
                           bool end) {
  if (ts <= 0) untimed_ = true;
  if (fresh || ts < a.first_ts) {
    a.first_ts = ts;
    a.start = ts - l.wall_s;
  }
  // The latest record's ledger, a final record's at a tie (it runs to the attempt's end); a
  // window later than the final record (another process's under the same attempt) takes over.
  if (fresh || ts > a.latest_ts || (ts == a.latest_ts && (end || !a.ended))) {
    a.latest_ts = ts;
    a.ledger = l;
    a.world_size = world_size;
    a.ended = end;
  }
}

void AttemptLedgers::compact(std::vector<Mark>& marks) {
  std::sort(marks.begin(), marks.end(),
            [](const Mark& x, const Mark& y) { return x.step_first < y.step_first; });
  // The earlier ones two by two: a pair's steps from the first one's first to the second one's
  // last, its cumulative parts the second one's.
  const std::size_t older = marks.size() - kExactMarks;
  std::size_t out = 0;
  for (std::size_t i = 0; i < older; i += 2) {
    Mark m = marks[i];
    if (i + 1 < older) {
      const Mark& next = marks[i + 1];
      m.step_last = std::max(m.step_last, next.step_last);
      m.compute_s = next.compute_s;
      m.data_s = next.data_s;
    }
    marks[out++] = m;
  }
  for (std::size_t i = older; i < marks.size(); ++i) marks[out++] = marks[i];
  marks.resize(out);
}

void AttemptLedgers::add(const TrainEndRecord& record) {
  if (!record.ledger) return;
  auto key = std::make_pair(record.run_id.value_or(""), record.attempt.value_or(-1));
  auto [it, fresh] = attempts_.try_emplace(key);
  Attempt& a = it->second;
  place(a, fresh, record.ts, *record.ledger, record.world_size, true);
  if (a.first_step < 0 || record.step_first < a.first_step) a.first_step = record.step_first;
}

std::optional<std::pair<double, double>> AttemptLedgers::span() const {
  if (attempts_.empty() || untimed_) return std::nullopt;
  std::optional<std::pair<double, double>> out;
  for (const auto& [key, a] : attempts_) {
    const double end = a.start + a.ledger.wall_s;
    if (!out) {
      out = std::make_pair(a.start, end);
    } else {
      out->first = std::min(out->first, a.start);
      out->second = std::max(out->second, end);
    }
  }
  return out;
}

void AttemptLedgers::add(const TrainWindowRecord& record) {
  if (!record.ledger) return;
  const Ledger& l = *record.ledger;
  auto key = std::make_pair(record.run_id.value_or(""), record.attempt.value_or(-1));
  auto [it, fresh] = attempts_.try_emplace(key);
  Attempt& a = it->second;
  place(a, fresh, record.ts, l, record.world_size, false);
  if (a.first_step < 0 || record.step_first < a.first_step) a.first_step = record.step_first;
  a.marks.push_back({record.step_first, record.step_last, compute_s(l), l.data_wait_s});
  if (a.marks.size() >= 2 * kExactMarks) compact(a.marks);
  if (!fresh && record.step_first > a.last_first && record.ts < a.last_ts) a.clock_back = true;
  a.last_first = record.step_first;
  a.last_ts = record.ts;
}

std::int64_t AttemptLedgers::steps_run() const {
  std::int64_t steps = 0;
  for (const auto& [key, a] : attempts_) steps += a.ledger.steps;
  return steps;
}

std::optional<Ledger> AttemptLedgers::ledger(int rank, std::vector<std::string>* warnings) const {
  if (attempts_.empty()) return std::nullopt;
  for (const auto& [key, a] : attempts_) {
    if (!a.clock_back || warnings == nullptr) continue;
    // The ledger's parts are on the monotonic clock: only where attempts meet is the wall's.
    warnings->push_back(strprintf("rank %d: a window's time is before the window ahead of it (the "
                                  "wall clock was set back?); its ledger stands, and where "
                                  "attempts meet is placed by the first window of each",
                                  rank));
    break;
  }
  if (attempts_.size() == 1) return attempts_.begin()->second.ledger;
  std::vector<const Attempt*> order;
  for (const auto& [key, a] : attempts_) order.push_back(&a);
  std::sort(order.begin(), order.end(),
            [](const Attempt* x, const Attempt* y) { return x->start < y->start; });
  auto say = [&](const std::string& text) {
    if (warnings != nullptr) warnings->push_back(text);
  };
  Ledger job;
  job.attempts = static_cast<std::int64_t>(order.size());
  bool said_world = false, said_overlap = false;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Attempt& a = *order[k];
    Ledger l = a.ledger;
    if (k + 1 < order.size()) {
      const Attempt& next = *order[k + 1];
      // The steps the next attempt ran again: from its first step on.
      const std::int64_t resume = next.first_step;
      std::vector<Mark> marks = a.marks;
      std::sort(marks.begin(), marks.end(),
                [](const Mark& x, const Mark& y) { return x.step_first < y.step_first; });
      double lost_compute = 0, lost_data = 0, lost_steps = 0;
      double prev_compute = 0, prev_data = 0;
      for (const Mark& m : marks) {
        const double steps = static_cast<double>(m.step_last - m.step_first + 1);
        if (m.step_last >= resume && steps > 0) {
          const double share =
              static_cast<double>(m.step_last - std::max(m.step_first, resume) + 1) / steps;
          lost_compute += (m.compute_s - prev_compute) * share;
          lost_data += (m.data_s - prev_data) * share;
          lost_steps += steps * share;
        }
        prev_compute = m.compute_s;
        prev_data = m.data_s;
      }
      // Out of the parts those steps were counted in: their data wait, their ideal time, and
      // what they took beyond it.
      const double ideal = std::min(l.productive_s, l.ideal_step_s * lost_steps);
      l.productive_s -= ideal;
      // Their time beyond the ideal is in the slow steps' excess, or, where the attempt's first
      // step was among them, in the first step's: never more out of a part than it holds.
      double beyond = lost_compute - ideal;
      if (beyond > 0) {
        const double from_slow = std::min(beyond, std::max(l.slow_step_excess_s, 0.0));
        l.slow_step_excess_s -= from_slow;
        beyond -= from_slow;
        const double from_first = std::min(beyond, std::max(l.first_step_excess_s, 0.0));
        l.first_step_excess_s -= from_first;
        beyond -= from_first;
      }
      l.slow_step_excess_s -= beyond;  // faster than ideal (below 0 here): back to its part
      l.data_wait_s -= lost_data;
      l.lost_progress_s += lost_compute + lost_data;
      l.steps -= std::min(l.steps, static_cast<std::int64_t>(lost_steps + 0.5));
      const double gap = next.start - (a.start + a.ledger.wall_s);
      if (gap < 0 && !said_overlap) {
        said_overlap = true;
        say(strprintf("rank %d: two attempts' records overlap in time (records of two jobs in one "
                      "folder?); the time between them is counted below zero",
                      rank));
      }
      l.between_attempts_s += gap;
      l.wall_s += gap;
      l.recovery_s += gap + next.ledger.startup_s + next.ledger.setup_s + next.ledger.restore_s;
      if (next.world_size != a.world_size && !said_world) {
        said_world = true;
        say(strprintf("rank %d: the job was restarted with a world size of %d after %d; its "
                      "attempts are stitched as they ran",
                      rank, next.world_size, a.world_size));
      }
    }
    add_parts(job, l);  // the gap after it counted in its wall
    job.recovery_s += l.recovery_s;
  }
  // The job's ideal step: its attempts', weighed by their steps.
  double weighted = 0;
  for (const Attempt* a : order) {
    weighted += a->ledger.ideal_step_s * static_cast<double>(a->ledger.steps);
  }
  const std::int64_t run = steps_run();
  job.ideal_step_s = run > 0 ? weighted / static_cast<double>(run) : 0.0;
  job.goodput = job.wall_s > 0 ? job.productive_s / job.wall_s : 0.0;
  return job;
}

}  // namespace vxperf::analysis
