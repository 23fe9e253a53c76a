#include "analysis/window_state.h"

#include <algorithm>

namespace vxperf::analysis {

bool FirstSteps::seen_again(std::size_t run, std::int64_t attempt, std::int64_t step) {
  std::vector<Run>& runs = runs_[{run, attempt}];
  for (const Run& r : runs) {
    if (r.stride == 0 ? step == r.first
                      : step >= r.first && step <= r.last && (step - r.first) % r.stride == 0) {
      return true;
    }
  }
  // The next step of a run (the last one added to first: the usual one), a run's second step, or
  // a run of its own.
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    Run& r = *it;
    if (r.stride == 0) {
      r.stride = step > r.first ? step - r.first : r.first - step;
      r.first = std::min(r.first, step);
      r.last = r.first + r.stride;
      return false;
    }
    if (step == r.last + r.stride) {
      r.last = step;
      return false;
    }
    if (step == r.first - r.stride) {
      r.first = step;
      return false;
    }
  }
  if (runs.size() < kMaxRuns) runs.push_back({step, step, 0});
  return false;
}

std::size_t FirstSteps::bytes() const {
  std::size_t bytes = 0;
  for (const auto& [key, runs] : runs_) bytes += 64 + runs.capacity() * sizeof(Run);
  return bytes;
}

void WindowPhases::fold(Entry& into, const Entry& e) {
  const double steps = static_cast<double>(into.steps) + static_cast<double>(e.steps);
  if (steps > 0) {
    for (std::size_t p = 0; p < into.phases.size(); ++p) {
      into.phases[p] = static_cast<float>(
          (static_cast<double>(into.phases[p]) * into.steps + static_cast<double>(e.phases[p]) * e.steps) /
          steps);
    }
  }
  into.steps = static_cast<float>(steps);
}

void WindowPhases::add(std::size_t run, std::int64_t attempt, std::int64_t step_first,
                       std::int64_t steps, int rank, const Phases& phases) {
  Entry entry{rank, static_cast<float>(steps), phases};
  if (shift_ < 0) {
    windows_[{run, attempt, step_first, steps}].push_back(entry);
    if (windows_.size() > kMaxWindows) regroup();
    return;
  }
  // A band holds each rank once, in rank order: a rank's file adds to the last entry.
  std::vector<Entry>& band = windows_[{run, attempt, step_first >> shift_, 0}];
  auto it = band.empty() || band.back().rank < rank
                ? band.end()
                : std::lower_bound(band.begin(), band.end(), rank,
                                   [](const Entry& e, int r) { return e.rank < r; });
  if (it != band.end() && it->rank == rank) {
    fold(*it, entry);
  } else {
    band.insert(it, entry);
  }
  if (windows_.size() > kMaxWindows) regroup();
}

void WindowPhases::regroup() {
  do {
    coarser();
  } while (windows_.size() > kMaxWindows / 2);
}

void WindowPhases::coarser() {
  // Each entry with its new band, sorted by band and rank, then one entry per band and rank.
  std::vector<std::pair<Key, Entry>> all;
  ++shift_;
  for (const auto& [key, entries] : windows_) {
    // From windows: the band of the first step; from bands: half as many.
    const std::int64_t band =
        std::get<3>(key) > 0 ? std::get<2>(key) >> shift_ : std::get<2>(key) >> 1;
    for (const Entry& e : entries) {
      all.emplace_back(Key{std::get<0>(key), std::get<1>(key), band, 0}, e);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.rank < b.second.rank;
  });
  windows_.clear();
  for (const auto& [key, e] : all) {
    std::vector<Entry>& band = windows_[key];
    if (!band.empty() && band.back().rank == e.rank) {
      fold(band.back(), e);
    } else {
      band.push_back(e);
    }
  }
  for (auto& [key, entries] : windows_) entries.shrink_to_fit();
}

void WindowPhases::merge(const WindowPhases& other) {
  WindowPhases theirs = other;
  while (theirs.shift_ < shift_) theirs.coarser();
  while (shift_ < theirs.shift_) coarser();
  for (const auto& [key, entries] : theirs.windows_) {
    std::vector<Entry>& mine = windows_[key];
    for (const Entry& e : entries) {
      mine.insert(std::upper_bound(mine.begin(), mine.end(), e.rank,
                                   [](int r, const Entry& x) { return r < x.rank; }),
                  e);
    }
  }
  if (windows_.size() > kMaxWindows) regroup();
}

std::size_t WindowPhases::bytes() const {
  std::size_t bytes = 0;
  for (const auto& [key, entries] : windows_) bytes += 64 + entries.capacity() * sizeof(Entry);
  return bytes;
}

}  // namespace vxperf::analysis
