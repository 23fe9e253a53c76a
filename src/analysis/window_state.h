// What the report keeps of the windows beyond running sums, each in a bounded structure so that
// its memory does not grow with the windows (ReportBuilder, report_builder.cpp): the steps a
// rank's windows began at (FirstSteps), and the ranks' phases window by window for what the
// stragglers cost (WindowPhases). The percentiles' values are in value_sketch.h.
//
// Thread safety: none; one report builder's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "vxperf/phases.h"

namespace vxperf::analysis {

// The steps a rank's windows began at, per attempt, as runs of evenly spaced steps (a rank's
// windows of one length make one run, a partial or a restarted one a few more): whether a window
// begins where another did, without a list of windows. At most kMaxRuns runs an attempt: past
// them (windows of ever-changing lengths) a first step is no longer remembered, and a repeat of
// it goes unsaid.
class FirstSteps {
 public:
  static constexpr std::size_t kMaxRuns = 64;

  // Notes `step` under the attempt (`run`: its run id hashed; `attempt`: its restart count, -1
  // unsaid); whether it was noted before.
  bool seen_again(std::size_t run, std::int64_t attempt, std::int64_t step);
  std::size_t bytes() const;
  // Its bytes in a report partial (analysis/partial_io.h).
  template <class IO>
  void fields(IO& io) {
    io(runs_);
  }

 private:
  struct Run {
    std::int64_t first = 0, last = 0, stride = 0;  // stride 0: the one step `first`
    template <class IO>
    void fields(IO& io) {
      io(first, last, stride);
    }
  };
  std::map<std::pair<std::size_t, std::int64_t>, std::vector<Run>> runs_;
};

// Each window's phases on each rank (its mean seconds per step in each phase), for what the
// stragglers cost (RankSummary::lost_s): per window the ranks share, the rank most above the
// per-phase medians is charged its seconds above them times the window's steps.
//
// Exact for up to kMaxWindows windows (keyed by attempt, first step and steps, as the ranks share
// them). Past that, windows are taken in bands of 2^k steps by their first step (each rank's band
// the mean per step over its windows in it, and their steps), k the least that keeps the bands
// to half of kMaxWindows, raised as more come: the cost is then that of the bands, a band a
// window. Memory: at most kMaxWindows x ranks entries of 96 bytes (key and entry), in two flat
// arrays sorted by key: a map of windows, each a vector of entries, was two allocations of 176
// bytes for one rank's window (a third of the report's memory on 1024 rank files).
class WindowPhases {
 public:
  static constexpr std::size_t kMaxWindows = 256;
  using Phases = std::array<float, kPhaseCount>;
  struct Entry {
    int rank = 0;
    float steps = 0;  // a band's: the rank's steps in it
    Phases phases{};  // mean seconds per step
    template <class IO>
    void fields(IO& io) {
      io(rank, steps, phases);
    }
  };
  // A window: its attempt (run id hashed, restart count), first step and steps; a band: its
  // attempt, its number (first step >> k) and 0.
  using Key = std::tuple<std::size_t, std::int64_t, std::int64_t, std::int64_t>;

  void add(std::size_t run, std::int64_t attempt, std::int64_t step_first, std::int64_t steps,
           int rank, const Phases& phases);
  // The windows (or bands) in key order, each with its entries: a copy, for tests.
  std::map<Key, std::vector<Entry>> windows() const;
  // fn(key, entries, count) for each window (or band) in key order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < keys_.size();) {
      std::size_t j = i + 1;
      while (j < keys_.size() && keys_[j] == keys_[i]) ++j;
      fn(keys_[i], entries_.data() + i, j - i);
      i = j;
    }
  }
  // The steps an entry of `key` is charged for.
  static double steps_of(const Key& key, const Entry& e) {
    return std::get<3>(key) > 0 ? static_cast<double>(std::get<3>(key))
                                : static_cast<double>(e.steps);
  }
  bool banded() const { return shift_ >= 0; }
  std::size_t bytes() const;
  // The room past its entries given back (a rank's file read: its windows grew by doubling).
  void shrink_to_fit() {
    keys_.shrink_to_fit();
    entries_.shrink_to_fit();
  }
  // Another rank's windows beside these (the job's from its ranks', each rank's kept apart:
  // ReportBuilder): both brought to the coarser bands, then into coarser ones again while
  // more than kMaxWindows. Each entry stays its rank's.
  void merge(const WindowPhases& other);
  // fn(key, entries) for each window (or band) of what merging `sources` one after the other into
  // an empty WindowPhases makes, in key order, without making it (the job's windows from its
  // ranks': as many entries again as all ranks hold). Where each source holds one rank's entries
  // and the sources come in rank order (ReportBuilder's), the merge is each source brought to
  // the coarsest bands the merge reaches and its entries set side by side; else it is made.
  static void for_each_merged(const std::vector<const WindowPhases*>& sources,
                              const std::function<void(const Key&, const std::vector<Entry>&)>& fn);
  // The same walk cut into `parts` runs of windows in key order, each walked on a thread of its
  // own (the first on the calling thread) at once: fn(part, key, entries), in key order within a
  // part. Where the merge is made, one part, on the calling thread.
  static void for_each_merged(
      const std::vector<const WindowPhases*>& sources,
      const std::function<void(std::size_t, const Key&, const std::vector<Entry>&)>& fn,
      std::size_t parts);
  // Its bytes in a report partial (analysis/partial_io.h): those of a map of windows to their
  // entries, then the shift.
  template <class IO>
  void fields(IO& io) {
    std::map<Key, std::vector<Entry>> windows = this->windows();
    io(windows, shift_);
    if (shift_ < -1 || shift_ > 62) throw std::invalid_argument("windows' bands out of shape");
    keys_.clear();
    entries_.clear();
    for (const auto& [key, entries] : windows) {
      keys_.insert(keys_.end(), entries.size(), key);
      entries_.insert(entries_.end(), entries.begin(), entries.end());
    }
    count_keys();
  }

 private:
  // Into bands of 2^shift_ steps (from windows, or from bands of half as many), merged by rank.
  void regroup();
  // One step of it: bands of twice the steps.
  void coarser();
  // A key's band one step coarser than `shift` (the shift before the step).
  static Key coarser_key(const Key& key, int shift);
  static void fold(Entry& into, const Entry& e);
  void insert(std::size_t at, const Key& key, const Entry& e);
  void count_keys();

  std::vector<Key> keys_;       // each entry's window (or band), sorted
  std::vector<Entry> entries_;  // a window's in the order merged (by rank) or added
  std::size_t windows_ = 0;     // distinct keys
  int shift_ = -1;              // -1: exact windows
};

}  // namespace vxperf::analysis
