// What one record struct holds, copied into another of its type through its field table: what a
// meter read joins what the backend read (Context::add_meter_readings) with no code that names a
// field, so a reading added to DeviceReadings and its row reaches the record by itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "schema/row_walk.h"

namespace vxperf::internal {

// Whether a member holds something: an optional with a value, a true flag, a number other than 0,
// a string or list that is not empty.
template <class T>
bool held(const std::optional<T>& v) {
  return v.has_value();
}
template <class T>
bool held(const std::vector<T>& v) {
  return !v.empty();
}
inline bool held(const std::string& v) { return !v.empty(); }
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
bool held(T v) {
  return v != T{};
}

// The second walk of merge_held, over `into`: each row's member of `from` is the next one noted
// by the first walk (the same table, so the same rows in the same order, of the same types).
class HeldMerge {
 public:
  explicit HeldMerge(const std::vector<const void*>& from) : from_(from) {}
  void operator()(const Row&) { ++i_; }  // no member of its own (a tag, an object)
  template <class T>
  void operator()(const Row&, const T& member) {
    const T& source = *static_cast<const T*>(from_[i_++]);
    // The object walked is not const: the walk only hands its members over as const.
    if (held(source)) const_cast<T&>(member) = source;
  }

 private:
  const std::vector<const void*>& from_;
  std::size_t i_ = 0;
};

// Copies every member of `from` that holds something (held) over the same member of `into`, row
// by row of `describe(io, R&)`; the rest of `into` stays as it was.
template <class R>
void merge_held(R& into, const R& from) {
  std::vector<const void*> members;  // `from`'s, in its table's order
  walk_rows([&](auto& io) { describe(io, from); },
            [&](const Row& row) { members.push_back(row.member); });
  HeldMerge merge(members);
  walk_rows([&](auto& io) { describe(io, into); }, merge);
}

}  // namespace vxperf::internal
