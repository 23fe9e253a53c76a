// The digits of a plain decimal number (what record writers write: -?(0|[1-9][0-9]*)(.[0-9]+)?),
// eight at a time, and the double they make, with nothing but the language and its library:
// no other library's internals, so that an upgrade of one cannot break the build.
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cfloat>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <system_error>

namespace vxperf::analysis {

// Whether the eight bytes at `p` are all ASCII digits: each byte's high nibble is 3 and adding 6
// to it carries into no high nibble.
inline bool eight_digits(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return ((v & 0xF0F0F0F0F0F0F0F0ULL) |
          (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) == 0x3333333333333333ULL;
}

// The value of the eight digits at `p` (eight_digits(p) holds): pairs, then fours, then the
// eight combined in three multiplications (the first digit in the lowest byte: little-endian).
inline std::uint32_t eight_digits_value(const std::uint8_t* p) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the digit lanes assume little-endian");
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  v = (v & 0x0F0F0F0F0F0F0F0FULL) * 2561 >> 8;             // 10 x even digit + odd digit
  v = (v & 0x00FF00FF00FF00FFULL) * 6553601 >> 16;         // 100 x pair + pair
  return static_cast<std::uint32_t>((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL >> 32);
}

// The double nearest to `mantissa` x 10^`exponent` (negated when `negative`), where `token` is
// the number as written. A mantissa below 2^53 and a power of ten up to 10^22 are both exact
// doubles, so one multiplication or division rounds once, correctly (Clinger's fast path); a
// larger mantissa on x86 through x87's extended precision, checked (below); anything else goes
// to std::from_chars, correctly rounded too. False: `token` is no number.
inline bool decimal_to_double(std::uint64_t mantissa, std::int64_t exponent, bool negative,
                              std::string_view token, double& out) {
  static constexpr std::array<double, 23> kPowers = {
      1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (mantissa <= (std::uint64_t{1} << 53) && exponent >= -22 && exponent <= 22) {
    double d = static_cast<double>(mantissa);
    d = exponent < 0 ? d / kPowers[static_cast<std::size_t>(-exponent)]
                     : d * kPowers[static_cast<std::size_t>(exponent)];
    out = negative ? -d : d;
    return true;
  }
#if (defined(__x86_64__) || defined(__i386__)) && LDBL_MANT_DIG == 64
  // The rest (17 digits, past 2^53: half of what Python writes) in x87's 64-bit significand,
  // where the mantissa below 2^63 and a power of ten up to 10^27 are exact: one division or
  // multiplication rounds the exact value once, to 64 bits. Rounding that to a double's 53 bits
  // rounds the exact value the same way unless it lands on a midpoint between two doubles (its
  // 11 bits past the double's are 10000000000: a midpoint is a 64-bit number, so a value on
  // either side of one rounds to it or stays on its side): then std::from_chars decides.
  // std::from_chars took about 40 ns a number here, this about a quarter of it. (Valgrind
  // computes x87's long double as a double: under it these may come out an ulp off.)
  static constexpr std::array<long double, 28> kLongPowers = {
      1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
      1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
      1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
  if (mantissa < (std::uint64_t{1} << 63) && exponent >= -27 && exponent <= 27) {
    const auto m = static_cast<long double>(static_cast<std::int64_t>(mantissa));
    const long double q = exponent < 0 ? m / kLongPowers[static_cast<std::size_t>(-exponent)]
                                       : m * kLongPowers[static_cast<std::size_t>(exponent)];
    std::uint64_t significand;
    std::memcpy(&significand, &q, sizeof significand);  // the 64 bits, the integer bit on top
    if ((significand & 0x7FF) != 0x400) {
      const auto d = static_cast<double>(q);
      out = negative ? -d : d;
      return true;
    }
  }
#endif
  const char* end = token.data() + token.size();
  auto [at, error] = std::from_chars(token.data(), end, out);
  return error == std::errc() && at == end;
}

}  // namespace vxperf::analysis
