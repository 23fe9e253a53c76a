// Values with their weights, for their percentiles and median, in a bounded number of entries:
// what the report keeps of a rank's windows (their step p50s and p95s, each phase's seconds per
// step) instead of a list of them, so that its memory does not grow with the windows.
//
// Each distinct value is an entry with its summed weight while there are at most `limit` of
// them: the percentiles are then exactly those of the list (internal::weighted_percentile,
// internal::median). Past the limit, values that share their sign, binary exponent and leading
// mantissa bits share an entry (a bin: the mantissa's trailing bits dropped, one more bit at a
// time until `limit` entries are enough), which keeps the smallest and largest of its values and
// their summed weight, and a percentile falling in a bin is placed between those two by its share
// of the bin's weight (the values taken as evenly spread): a bin of one value gives it exactly.
// A bin is at most 2^-m of its values wide with m leading bits kept: values spread over a narrow
// range (a rank's step times) keep many, a few decades over `limit` entries (a phase near zero
// in some windows) fewer.
//
// Thread safety: none to add; the const queries only read (two threads may query one sketch).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace vxperf::analysis {

// `Value`: double, or float where the report keeps a float; `Weight`: the weights' type (whole
// numbers: step counts, or 1 a value).
template <class Value, class Weight>
class ValueSketch {
  static_assert(std::is_same_v<Value, double> || std::is_same_v<Value, float>);
  using Key = std::conditional_t<std::is_same_v<Value, double>, std::uint64_t, std::uint32_t>;
  static constexpr int kBits = static_cast<int>(sizeof(Key) * 8);
  static constexpr Key kSign = Key{1} << (kBits - 1);

 public:
  // Past 2^-m wide, with m = the mantissa's bits: whole binades, then several.
  static constexpr int kMaxDropped = kBits - 2;

  explicit ValueSketch(std::uint32_t limit = 128) : limit_(std::max<std::uint32_t>(limit, 2)) {}

  void add(Value value, Weight weight) {
    if (value != value) return;  // NaN has no place in an order
    if (value == 0) value = 0;    // -0 is 0
    if (count_ == 0 || value < min_) min_ = value;
    if (count_ == 0 || value > max_) max_ = value;
    ++count_;
    const Key k = truncate(key_of(value));
    // A value whose entry is there already (most, once the values are binned) adds its weight.
    auto end = entries_.begin() + static_cast<std::ptrdiff_t>(sorted_);
    auto it = std::lower_bound(entries_.begin(), end, k,
                               [this](const Entry& e, Key bin) { return key(e) < bin; });
    if (it != end && key(*it) == k) {
      it->weight += weight;
      it->lo = std::min(it->lo, value);
      it->hi = std::max(it->hi, value);
      return;
    }
    if (entries_.size() == entries_.capacity()) {
      entries_.reserve(std::min<std::size_t>(std::max<std::size_t>(2 * entries_.size(), 8),
                                             limit_ + pending_limit()));
    }
    entries_.push_back({value, value, weight});
    if (entries_.size() - sorted_ >= pending_limit()) settle();
  }

  // Another sketch's values added to these (the run's percentiles over its ranks').
  void merge(const ValueSketch& other) {
    if (other.count_ == 0) return;
    if (count_ == 0 || other.min_ < min_) min_ = other.min_;
    if (count_ == 0 || other.max_ > max_) max_ = other.max_;
    count_ += other.count_;
    if (other.dropped_ > dropped_) {
      dropped_ = other.dropped_;
      sorted_ = 0;  // keys with more bits dropped may now repeat: settled again below
    }
    entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
    if (entries_.size() - sorted_ >= pending_limit() || sorted_ == 0) settle();
  }

  bool empty() const { return count_ == 0; }
  // Every value kept as added: the percentiles are the list's.
  bool exact() const { return dropped_ == 0; }
  // The heap bytes it holds.
  std::size_t bytes() const { return entries_.capacity() * sizeof(Entry); }

  // The smallest value whose cumulative weight, values ascending, reaches q percent of the
  // total (q in [0, 100]): internal::weighted_percentile's rule for positive weights. 0 for none.
  double weighted_percentile(double q) const {
    const std::vector<Entry> view = settled();
    double total = 0;
    for (const Entry& e : view) total += static_cast<double>(e.weight);
    if (view.empty() || total <= 0) return 0;
    const double target = q / 100.0 * total;
    double before = 0;
    for (const Entry& e : view) {
      const auto w = static_cast<double>(e.weight);
      if (before + w >= target) return place(e, w > 0 ? (target - before) / w : 0.0);
      before += w;
    }
    return static_cast<double>(max_);  // not reached by rounding: the largest value
  }

  // The median of the values, each weighing one (internal::median's rule: the middle two's mean
  // for an even count); NaN for none.
  double median() const {
    const std::vector<Entry> view = settled();
    double n = 0;
    for (const Entry& e : view) n += static_cast<double>(e.weight);
    if (n < 1) return std::numeric_limits<double>::quiet_NaN();
    const auto count = static_cast<std::uint64_t>(n);
    const double upper = nth(view, count / 2);
    if (count % 2 == 1) return upper;
    return (nth(view, count / 2 - 1) + upper) / 2.0;
  }

 private:
  struct Entry {
    Value lo, hi;  // the smallest and largest value in it (one while exact)
    Weight weight;
  };

  // An order-preserving key: the bits of a positive value with the sign bit set, of a negative
  // one all flipped.
  static Key key_of(Value value) {
    Key bits;
    std::memcpy(&bits, &value, sizeof bits);
    return (bits & kSign) != 0 ? static_cast<Key>(~bits) : static_cast<Key>(bits | kSign);
  }
  Key mask() const { return dropped_ == 0 ? Key{0} : static_cast<Key>((Key{1} << dropped_) - 1); }
  Key truncate(Key key) const { return static_cast<Key>(key & ~mask()); }
  Key key(const Entry& e) const { return truncate(key_of(e.lo)); }
  std::size_t pending_limit() const { return std::max<std::size_t>(limit_ / 8, 8); }

  // The pending entries sorted in, equal keys combined, and bits dropped while they are too many.
  void settle() {
    sort(entries_, sorted_);
    combine(entries_);
    while (entries_.size() > limit_ && dropped_ < kMaxDropped) {
      ++dropped_;
      combine(entries_);
    }
    sorted_ = entries_.size();
  }
  // Entries whose [0, sorted) are sorted, all sorted (by their smallest values: bins do not
  // overlap).
  static void sort(std::vector<Entry>& entries, std::size_t sorted) {
    auto by_value = [](const Entry& a, const Entry& b) { return key_of(a.lo) < key_of(b.lo); };
    auto middle = entries.begin() + static_cast<std::ptrdiff_t>(sorted);
    std::sort(middle, entries.end(), by_value);
    std::inplace_merge(entries.begin(), middle, entries.end(), by_value);
  }
  // Sorted entries of one key made one.
  void combine(std::vector<Entry>& entries) const {
    std::size_t out = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      Entry& last = entries[out > 0 ? out - 1 : 0];
      if (out > 0 && key(last) == key(entries[i])) {
        last.weight += entries[i].weight;
        last.lo = std::min(last.lo, entries[i].lo);
        last.hi = std::max(last.hi, entries[i].hi);
      } else {
        entries[out++] = entries[i];
      }
    }
    entries.resize(out);
  }
  // The entries sorted and combined, the pending ones with them (a copy: queries only read).
  std::vector<Entry> settled() const {
    std::vector<Entry> view = entries_;
    sort(view, sorted_);
    combine(view);
    return view;
  }
  // The value `share` of the way from entry `e`'s smallest value to its largest: the value itself
  // while exact.
  static double place(const Entry& e, double share) {
    const auto lo = static_cast<double>(e.lo), hi = static_cast<double>(e.hi);
    return lo == hi ? lo : lo + (hi - lo) * std::clamp(share, 0.0, 1.0);
  }
  // The k-th value (from 0) with every weight a count: a bin's first its smallest, its last its
  // largest.
  double nth(const std::vector<Entry>& view, std::uint64_t k) const {
    double before = 0;
    const auto at = static_cast<double>(k);
    for (const Entry& e : view) {
      const auto w = static_cast<double>(e.weight);
      if (at < before + w) return place(e, w > 1 ? (at - before) / (w - 1) : 0.0);
      before += w;
    }
    return static_cast<double>(max_);
  }

  std::vector<Entry> entries_;  // [0, sorted_) sorted, one a key; then pending ones
  std::size_t sorted_ = 0;
  std::uint32_t limit_;
  int dropped_ = 0;  // the key's trailing bits dropped: 0 while exact
  std::uint64_t count_ = 0;
  Value min_ = 0, max_ = 0;
};

}  // namespace vxperf::analysis
