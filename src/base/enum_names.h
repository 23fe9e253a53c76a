// An enum's names as one table indexed by its enumerators (0, 1, ... in order), looked up by one
// function rather than a switch per enum. The switch's -Wswitch warning has no table equivalent:
// each table's static_assert that it has a row for every enumerator up to the last takes its place.
#pragma once

#include <array>
#include <cstddef>

namespace vxperf::internal {

// How many enumerators run from the first (0) to `last`: the size a names table must have.
template <class Enum>
constexpr std::size_t enumerators_through(Enum last) {
  return static_cast<std::size_t>(last) + 1;
}

// The name of `value`, or `otherwise` for a value past the table (one cast from a wider integer,
// or a kCount sentinel).
template <class Enum, std::size_t N>
constexpr const char* enum_name(Enum value, const std::array<const char*, N>& names,
                                const char* otherwise) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : otherwise;
}

}  // namespace vxperf::internal
