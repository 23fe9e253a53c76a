#include "analysis/window_state.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <iterator>
#include <optional>
#include <system_error>
#include <thread>

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

void WindowPhases::insert(std::size_t at, const Key& key, const Entry& e) {
  keys_.insert(keys_.begin() + static_cast<std::ptrdiff_t>(at), key);
  entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(at), e);
}

void WindowPhases::count_keys() {
  windows_ = 0;
  for (std::size_t i = 0; i < keys_.size(); ++i) windows_ += i == 0 || keys_[i] != keys_[i - 1];
}

void WindowPhases::add(std::size_t run, std::int64_t attempt, std::int64_t step_first,
                       std::int64_t steps, int rank, const Phases& phases) {
  Entry entry{rank, static_cast<float>(steps), phases};
  if (shift_ < 0) {
    // After the window's entries so far (a rank's windows come in order: at the end).
    const Key key{run, attempt, step_first, steps};
    const std::size_t at =
        keys_.empty() || !(key < keys_.back())
            ? keys_.size()
            : static_cast<std::size_t>(std::upper_bound(keys_.begin(), keys_.end(), key) -
                                       keys_.begin());
    windows_ += at == 0 || keys_[at - 1] != key;
    insert(at, key, entry);
    if (windows_ > kMaxWindows) regroup();
    return;
  }
  // A band holds each rank once, in rank order: a rank's file adds to the last entry.
  const Key key{run, attempt, step_first >> shift_, 0};
  std::size_t lo = keys_.size(), hi = keys_.size();
  if (!keys_.empty() && !(keys_.back() < key)) {
    auto [first, last] = std::equal_range(keys_.begin(), keys_.end(), key);
    lo = static_cast<std::size_t>(first - keys_.begin());
    hi = static_cast<std::size_t>(last - keys_.begin());
  }
  std::size_t at = hi;
  if (lo < hi && !(entries_[hi - 1].rank < rank)) {
    at = static_cast<std::size_t>(
        std::lower_bound(entries_.begin() + static_cast<std::ptrdiff_t>(lo),
                         entries_.begin() + static_cast<std::ptrdiff_t>(hi), rank,
                         [](const Entry& e, int r) { return e.rank < r; }) -
        entries_.begin());
  }
  if (at != hi && entries_[at].rank == rank) {
    fold(entries_[at], entry);
  } else {
    windows_ += lo == hi;
    insert(at, key, entry);
  }
  if (windows_ > kMaxWindows) regroup();
}

void WindowPhases::regroup() {
  do {
    coarser();
  } while (windows_ > kMaxWindows / 2);
}

WindowPhases::Key WindowPhases::coarser_key(const Key& key, int shift) {
  // From windows: the band of the first step; from bands: half as many.
  const std::int64_t band =
      std::get<3>(key) > 0 ? std::get<2>(key) >> shift : std::get<2>(key) >> 1;
  return Key{std::get<0>(key), std::get<1>(key), band, 0};
}

void WindowPhases::coarser() {
  // Each entry with its new band, sorted by band and rank, then one entry per band and rank.
  ++shift_;
  for (Key& key : keys_) key = coarser_key(key, shift_);
  std::vector<std::uint32_t> order(keys_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [this](std::uint32_t a, std::uint32_t b) {
    return keys_[a] != keys_[b] ? keys_[a] < keys_[b] : entries_[a].rank < entries_[b].rank;
  });
  std::vector<Key> keys;
  std::vector<Entry> entries;
  keys.reserve(keys_.size());
  entries.reserve(entries_.size());
  for (std::uint32_t i : order) {
    if (!keys.empty() && keys.back() == keys_[i] && entries.back().rank == entries_[i].rank) {
      fold(entries.back(), entries_[i]);
    } else {
      keys.push_back(keys_[i]);
      entries.push_back(entries_[i]);
    }
  }
  keys.shrink_to_fit();
  entries.shrink_to_fit();
  keys_ = std::move(keys);
  entries_ = std::move(entries);
  count_keys();
}

void WindowPhases::merge(const WindowPhases& other) {
  const WindowPhases* theirs = &other;
  WindowPhases coarse;
  if (other.shift_ < shift_) {
    coarse = other;
    while (coarse.shift_ < shift_) coarse.coarser();
    theirs = &coarse;
  }
  while (shift_ < theirs->shift_) coarser();
  // Key by key: a window of both, theirs each put after the entries of its rank and below.
  std::vector<Key> keys;
  std::vector<Entry> entries, window;
  keys.reserve(keys_.size() + theirs->keys_.size());
  entries.reserve(entries_.size() + theirs->entries_.size());
  std::size_t i = 0, j = 0;
  while (i < keys_.size() || j < theirs->keys_.size()) {
    const bool mine =
        j == theirs->keys_.size() || (i < keys_.size() && keys_[i] < theirs->keys_[j]);
    const Key key = mine ? keys_[i] : theirs->keys_[j];
    window.clear();
    for (; i < keys_.size() && keys_[i] == key; ++i) window.push_back(entries_[i]);
    for (; j < theirs->keys_.size() && theirs->keys_[j] == key; ++j) {
      const Entry& e = theirs->entries_[j];
      window.insert(std::upper_bound(window.begin(), window.end(), e.rank,
                                     [](int r, const Entry& x) { return r < x.rank; }),
                    e);
    }
    keys.insert(keys.end(), window.size(), key);
    entries.insert(entries.end(), window.begin(), window.end());
  }
  keys_ = std::move(keys);
  entries_ = std::move(entries);
  count_keys();
  if (windows_ > kMaxWindows) regroup();
}

void WindowPhases::for_each_merged(
    const std::vector<const WindowPhases*>& sources,
    const std::function<void(const Key&, const std::vector<Entry>&)>& fn) {
  for_each_merged(
      sources,
      [&fn](std::size_t, const Key& key, const std::vector<Entry>& entries) { fn(key, entries); },
      1);
}

void WindowPhases::for_each_merged(
    const std::vector<const WindowPhases*>& sources,
    const std::function<void(std::size_t, const Key&, const std::vector<Entry>&)>& fn,
    std::size_t parts) {
  std::vector<Entry> window;
  // One rank a source, in rank order: else the merge made.
  bool ranked = true;
  std::optional<int> last;
  for (const WindowPhases* s : sources) {
    for (const Entry& e : s->entries_) ranked = ranked && e.rank == s->entries_.front().rank;
    if (!s->entries_.empty()) {
      ranked = ranked && (!last || *last < s->entries_.front().rank);
      last = s->entries_.front().rank;
    }
  }
  if (!ranked) {
    WindowPhases all;
    for (const WindowPhases* s : sources) all.merge(*s);
    all.for_each([&](const Key& key, const Entry* entries, std::size_t n) {
      window.assign(entries, entries + n);
      fn(0, key, window);
    });
    return;
  }
  // The bands the merge ends at: its keys alone, merged and made coarser as merge() does.
  auto coarsen = [](std::vector<Key>& keys, int& shift) {
    ++shift;
    for (Key& key : keys) key = coarser_key(key, shift);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  };
  std::vector<Key> job, theirs, both;
  int shift = -1;
  for (const WindowPhases* s : sources) {
    theirs = s->keys_;
    theirs.erase(std::unique(theirs.begin(), theirs.end()), theirs.end());
    int their_shift = s->shift_;
    while (their_shift < shift) coarsen(theirs, their_shift);
    while (shift < their_shift) coarsen(job, shift);
    both.clear();
    std::set_union(job.begin(), job.end(), theirs.begin(), theirs.end(), std::back_inserter(both));
    job.swap(both);
    if (job.size() > kMaxWindows) {
      do {
        coarsen(job, shift);
      } while (job.size() > kMaxWindows / 2);
    }
  }
  // Each source at those bands (a coarser copy where its own are finer), then key by key each
  // source's entries after the ranks' before it.
  std::deque<WindowPhases> copies;
  std::vector<const WindowPhases*> at_shift;
  for (const WindowPhases* s : sources) {
    if (s->shift_ < shift) {
      copies.push_back(*s);
      while (copies.back().shift_ < shift) copies.back().coarser();
      s = &copies.back();
    }
    at_shift.push_back(s);
  }
  // The windows [begin, end) of the job's, each source from its first entry of them on.
  auto walk = [&](std::size_t part, std::size_t begin, std::size_t end) {
    std::vector<Entry> entries;
    std::vector<std::size_t> next;
    for (const WindowPhases* s : at_shift) {
      next.push_back(begin == end
                         ? 0
                         : static_cast<std::size_t>(
                               std::lower_bound(s->keys_.begin(), s->keys_.end(), job[begin]) -
                               s->keys_.begin()));
    }
    for (std::size_t j = begin; j < end; ++j) {
      const Key& key = job[j];
      entries.clear();
      for (std::size_t i = 0; i < at_shift.size(); ++i) {
        const WindowPhases& s = *at_shift[i];
        std::size_t& k = next[i];
        while (k < s.keys_.size() && s.keys_[k] < key) ++k;
        for (; k < s.keys_.size() && s.keys_[k] == key; ++k) entries.push_back(s.entries_[k]);
      }
      fn(part, key, entries);
    }
  };
  parts = std::max<std::size_t>(std::min(parts, job.size()), 1);
  std::vector<std::exception_ptr> errors(parts);
  auto walk_part = [&](std::size_t p) {
    try {
      walk(p, job.size() * p / parts, job.size() * (p + 1) / parts);
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t p = 1; p < parts; ++p) {
    try {
      threads.emplace_back(walk_part, p);
    } catch (const std::system_error&) {
      walk_part(p);  // no thread to be had: here
    }
  }
  walk_part(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::map<WindowPhases::Key, std::vector<WindowPhases::Entry>> WindowPhases::windows() const {
  std::map<Key, std::vector<Entry>> out;
  for_each([&](const Key& key, const Entry* entries, std::size_t n) {
    out.emplace_hint(out.end(), key, std::vector<Entry>(entries, entries + n));
  });
  return out;
}

std::size_t WindowPhases::bytes() const {
  return keys_.capacity() * sizeof(Key) + entries_.capacity() * sizeof(Entry);
}

}  // namespace vxperf::analysis
