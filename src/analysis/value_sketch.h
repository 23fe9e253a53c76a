// Values with their weights, for their percentiles and median, in a bounded number of entries:
// what the report keeps of a rank's windows (their step p50s and p95s, each phase's seconds per
// step) instead of a list of them, so that its memory does not grow with the windows.
//
// Each distinct value is an entry with its summed weight while there are at most `limit` of
// them: the percentiles are then exactly those of the list (internal::weighted_percentile,
// internal::median). Past the limit, values that share their sign, binary exponent and leading
// mantissa bits share an entry (a bin: the fewest of the mantissa's trailing bits dropped that
// leave at most 3/4 of `limit` entries, more as more values come), which keeps the smallest and
// largest of its values and their summed weight, and a percentile falling in a bin is placed
// between those two by its share of the bin's weight (the values taken as evenly spread): a bin
// of one value gives it exactly. A bin is at most 2^-m of its values wide with m leading bits
// kept: values spread over a narrow range (a rank's step times) keep many, over a few decades (a
// phase near zero in some windows) fewer.
//
// Values wait unsorted until the entries first pass the limit, then are sorted at once; from then
// on the entries are kept sorted: an add finds its entry by a binary search without branches (the
// report adds a dozen values a window, in no order) and inserts a new one in place. Merged
// sketches' entries wait unsorted too, sorted in when a query comes or they pass the limit.
//
// Thread safety: none to add; the const queries only read (two threads may query one sketch).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
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
  // Past the mantissa's bits: whole binades, then several.
  static constexpr int kMaxDropped = kBits - 2;

  // `limit`: at least 4 (bins of whole binades and signs at the most dropped are at most 4).
  explicit ValueSketch(std::uint32_t limit = 128) : limit_(std::max<std::uint32_t>(limit, 4)) {}

  void add(Value value, Weight weight) {
    if (value != value) return;  // NaN has no place in an order
    if (value == 0) value = 0;    // -0 is 0
    if (count_ == 0 || value < min_) min_ = value;
    if (count_ == 0 || value > max_) max_ = value;
    ++count_;
    if (appending_) {
      // Until the entries first pass the limit (and after a merge), values wait unsorted: one
      // sort for them all, where inserting each in order moved half the entries. A value the
      // same as the last one's (a phase a record leaves out: zeros) adds to it.
      if (!entries_.empty() && entries_.back().lo == value && entries_.back().hi == value) {
        entries_.back().weight += weight;
        return;
      }
      if (entries_.size() == entries_.capacity()) grow();
      entries_.push_back({value, value, weight});
      if (entries_.size() - sorted_ > limit_) {
        settle();
        appending_ = false;
        // Few left (values repeated, not in a row): the room they no longer need given back.
        if (entries_.size() * 4 <= entries_.capacity()) entries_.shrink_to_fit();
      }
      return;
    }
    // The first entry reaching the value: its bin, or the one before it holds it (a value past
    // that bin's largest), or it goes in before that entry.
    const std::size_t at = reaching(value);
    const Key k = truncate(key_of(value));
    Entry* bin = nullptr;
    if (at < entries_.size() && key(entries_[at]) == k) {
      bin = &entries_[at];
    } else if (at > 0 && key(entries_[at - 1]) == k) {
      bin = &entries_[at - 1];
    }
    if (bin != nullptr) {
      bin->weight += weight;
      bin->lo = std::min(bin->lo, value);
      bin->hi = std::max(bin->hi, value);
      return;
    }
    if (entries_.size() == entries_.capacity()) grow();
    entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(at),
                    Entry{value, value, weight});
    if (entries_.size() > limit_) collapse();
    sorted_ = entries_.size();
  }

  // Another sketch's values added to these (the run's percentiles over its ranks'): sorted in
  // when a query comes, or once those waiting are more than the limit.
  void merge(const ValueSketch& other) {
    if (other.count_ == 0) return;
    if (count_ == 0 || other.min_ < min_) min_ = other.min_;
    if (count_ == 0 || other.max_ > max_) max_ = other.max_;
    count_ += other.count_;
    drop(std::max(dropped_, other.dropped_));
    entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
    appending_ = true;
    if (entries_.size() - sorted_ > limit_) settle();
  }

  bool empty() const { return count_ == 0; }
  // Every value kept as added: the percentiles are the list's.
  bool exact() const { return dropped_ == 0; }
  // The heap bytes it holds.
  std::size_t bytes() const { return entries_.capacity() * sizeof(Entry); }

  // Its bytes in a report partial (analysis/partial_io.h): every member, so that a sketch read
  // back adds, merges and answers as this one does.
  template <class IO>
  void fields(IO& io) {
    io(entries_, sorted_, appending_, limit_, dropped_, keep_, count_, min_, max_);
    if (sorted_ > entries_.size() || dropped_ < 0 || dropped_ > kMaxDropped || limit_ < 4) {
      throw std::invalid_argument("a value sketch out of shape");
    }
  }

  // The smallest value whose cumulative weight, values ascending, reaches q percent of the
  // total (q in [0, 100]): internal::weighted_percentile's rule for positive weights. 0 for none.
  double weighted_percentile(double q) const {
    return read([&](const std::vector<Entry>& entries) {
      double total = 0;
      for (const Entry& e : entries) total += static_cast<double>(e.weight);
      if (entries.empty() || total <= 0) return 0.0;
      const double target = q / 100.0 * total;
      double before = 0;
      for (const Entry& e : entries) {
        const auto w = static_cast<double>(e.weight);
        if (before + w >= target) return place(e, w > 0 ? (target - before) / w : 0.0);
        before += w;
      }
      return static_cast<double>(max_);  // not reached by rounding: the largest value
    });
  }

  // The median of the values, each weighing one (internal::median's rule: the middle two's mean
  // for an even count); NaN for none.
  double median() const {
    return read([&](const std::vector<Entry>& entries) {
      double n = 0;
      for (const Entry& e : entries) n += static_cast<double>(e.weight);
      if (n < 1) return std::numeric_limits<double>::quiet_NaN();
      const auto count = static_cast<std::uint64_t>(n);
      const double upper = nth(entries, count / 2);
      if (count % 2 == 1) return upper;
      return (nth(entries, count / 2 - 1) + upper) / 2.0;
    });
  }

 private:
  struct Entry {
    Value lo, hi;  // the smallest and largest value in it (one while exact)
    Weight weight;
    template <class IO>
    void fields(IO& io) {
      io(lo, hi, weight);
    }
  };

  // An order-preserving key: the bits of a positive value with the sign bit set, of a negative
  // one all flipped.
  static Key key_of(Value value) {
    Key bits;
    std::memcpy(&bits, &value, sizeof bits);
    return (bits & kSign) != 0 ? static_cast<Key>(~bits) : static_cast<Key>(bits | kSign);
  }
  Key truncate(Key key) const { return static_cast<Key>(key & keep_); }
  void drop(int bits) {
    dropped_ = bits;
    keep_ = static_cast<Key>(~((Key{1} << bits) - 1));
  }
  // The index of the first (sorted) entry whose largest value is at least `value`, the size if
  // none: a binary search without branches to mispredict (the values come in no order: a
  // branching search's mispredictions were most of an add).
  std::size_t reaching(Value value) const {
    std::size_t n = entries_.size();
    // The smallest values first: a phase a record leaves out is a zero, the first entry.
    if (n == 0 || !(entries_.front().hi < value)) return 0;
    const Entry* first = entries_.data();
    while (n > 1) {
      const std::size_t half = n / 2;
      first = first[half].hi < value ? first + half : first;
      n -= half;
    }
    return static_cast<std::size_t>(first - entries_.data()) + (first->hi < value ? 1 : 0);
  }
  Key key(const Entry& e) const { return truncate(key_of(e.lo)); }
  // Room for one more entry: the vector's doubling, but never past the limit and one more.
  void grow() {
    entries_.reserve(
        std::min<std::size_t>(std::max<std::size_t>(2 * entries_.size(), 8),
                              std::max<std::size_t>(std::size_t{limit_} + 1, entries_.size() + 1)));
  }

  // Past the limit: the fewest more bits dropped that leave at most three quarters of `limit`
  // entries (room for new bins before the next collapse: each drops a bit at least). Two
  // neighbours become one once the highest bit in which their keys differ is dropped: counted by
  // that bit, the fewest bits are where the neighbours kept apart are fewer than 3/4 `limit`.
  void collapse() {
    std::array<std::uint32_t, kBits + 1> at_bit{};  // neighbours made one by dropping this many
    for (std::size_t i = 0; i + 1 < entries_.size(); ++i) {
      const Key differ = key_of(entries_[i].lo) ^ key_of(entries_[i + 1].lo);
      ++at_bit[static_cast<std::size_t>(64 - __builtin_clzll(differ))];
    }
    const std::size_t most = std::size_t{limit_} * 3 / 4;
    int bits = kBits;
    std::size_t apart = 0;  // neighbours kept apart with `bits` dropped
    while (bits > dropped_ + 1 && 1 + apart + at_bit[static_cast<std::size_t>(bits)] <= most) {
      apart += at_bit[static_cast<std::size_t>(bits)];
      --bits;
    }
    drop(std::min(bits, kMaxDropped));
    combine(entries_);
  }
  // Every entry sorted, those of one key made one, collapsed past the limit.
  void settle() {
    sort_and_combine(entries_, sorted_);
    if (entries_.size() > limit_) collapse();
    sorted_ = entries_.size();
  }
  // The entries after the first `sorted` (which are) sorted, then merged with those: a run's
  // thousand ranks' merged entries were sorted whole again for each query and each settle. The
  // same entries whatever the sort: those of one value are one key's, made one by combine.
  void sort_and_combine(std::vector<Entry>& entries, std::size_t sorted) const {
    auto by_value = [](const Entry& a, const Entry& b) { return a.lo < b.lo; };  // bins: apart
    const auto middle = entries.begin() + static_cast<std::ptrdiff_t>(sorted);
    std::sort(middle, entries.end(), by_value);
    std::inplace_merge(entries.begin(), middle, entries.end(), by_value);
    combine(entries);
  }
  // Sorted entries of one key made one.
  void combine(std::vector<Entry>& entries) const {
    std::size_t out = 0;
    Key last = 0;
    for (const Entry& e : entries) {
      const Key k = key(e);
      if (out > 0 && k == last) {
        Entry& into = entries[out - 1];
        into.weight += e.weight;
        into.lo = std::min(into.lo, e.lo);
        into.hi = std::max(into.hi, e.hi);
      } else {
        entries[out++] = e;
        last = k;
      }
    }
    entries.resize(out);
  }
  // fn(entries sorted and combined): the sketch's own, or a copy with merged ones sorted in.
  template <class Fn>
  double read(Fn&& fn) const {
    if (sorted_ == entries_.size()) return fn(entries_);
    std::vector<Entry> view = entries_;
    sort_and_combine(view, sorted_);
    return fn(view);
  }
  // The value `share` of the way from entry `e`'s smallest value to its largest: the value itself
  // while exact.
  static double place(const Entry& e, double share) {
    const auto lo = static_cast<double>(e.lo), hi = static_cast<double>(e.hi);
    return lo == hi ? lo : lo + (hi - lo) * std::clamp(share, 0.0, 1.0);
  }
  // The k-th value (from 0) with every weight a count: a bin's first its smallest, its last its
  // largest.
  double nth(const std::vector<Entry>& entries, std::uint64_t k) const {
    double before = 0;
    const auto at = static_cast<double>(k);
    for (const Entry& e : entries) {
      const auto w = static_cast<double>(e.weight);
      if (at < before + w) return place(e, w > 1 ? (at - before) / (w - 1) : 0.0);
      before += w;
    }
    return static_cast<double>(max_);
  }

  std::vector<Entry> entries_;  // [0, sorted_) sorted, one a key; then ones waiting, unsorted
  std::size_t sorted_ = 0;
  bool appending_ = true;  // values wait unsorted (else sorted_ is every entry)
  std::uint32_t limit_;
  int dropped_ = 0;  // the key's trailing bits dropped: 0 while exact
  Key keep_ = static_cast<Key>(~Key{0});  // the bits a key keeps
  std::uint64_t count_ = 0;
  Value min_ = 0, max_ = 0;
};

}  // namespace vxperf::analysis
