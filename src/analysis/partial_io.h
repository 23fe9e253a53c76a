// The bytes of `vxperf report --partial` (report_partial.cpp): state walked by its `fields(io)`
// (a member, or a free function found by argument lookup) and written as it is in memory, so
// that every double and float reads back to the same bits and a merge sums what one run sums.
// Little-endian, each number at its own width (an int 4 bytes, a float 4, a double 8), a length
// of 8 bytes before each string and container, a byte before each bool and optional. A type copied
// as bytes (trivially copyable, no fields()) is written with its size, which a reader of another
// layout refuses.
//
// Reading checks every length against the bytes left and throws std::invalid_argument at the
// first thing out of place.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace vxperf::analysis::partial_io {

template <class T, class = void>
struct HasMember : std::false_type {};
struct Probe {
  template <class... V>
  void operator()(V&...) {}
};
template <class T>
struct HasMember<T, std::void_t<decltype(std::declval<T&>().fields(std::declval<Probe&>()))>>
    : std::true_type {};
template <class T, class = void>
struct HasFree : std::false_type {};
template <class T>
struct HasFree<T, std::void_t<decltype(fields(std::declval<Probe&>(), std::declval<T&>()))>>
    : std::true_type {};

// Whether T is Of<...> with type arguments alone (std::array, whose size is none, is IsTuple's).
template <class T, template <class...> class Of>
struct IsInstance : std::false_type {};
template <template <class...> class Of, class... A>
struct IsInstance<Of<A...>, Of> : std::true_type {};

template <class T>
using Container = std::disjunction<IsInstance<T, std::vector>, IsInstance<T, std::deque>>;
template <class T>
using IsMap = IsInstance<T, std::map>;
template <class T>
using IsSet = IsInstance<T, std::set>;
template <class T>
using IsOptional = IsInstance<T, std::optional>;
template <class T>
struct IsArray : std::false_type {};
template <class T, std::size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};
template <class T>
using IsTuple = std::disjunction<IsInstance<T, std::pair>, IsInstance<T, std::tuple>, IsArray<T>>;

// An optional whose value a plain T{} cannot stand for: its flag, then true where the caller walks
// the value; reading, `o` is emptied, or made by `make(o)` where it was empty.
template <class IO, class T, class Make>
bool walk_present(IO& io, std::optional<T>& o, Make make) {
  bool present = o.has_value();
  io(present);
  if (!present) {
    o.reset();
  } else if (!o) {
    make(o);
  }
  return present;
}

class Writer {
 public:
  template <class... T>
  void operator()(T&... values) {
    (put(values), ...);
  }
  std::string& bytes() { return out_; }

 private:
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  void length(std::size_t n) {
    const auto v = static_cast<std::uint64_t>(n);
    raw(&v, sizeof v);
  }

  template <class T>
  void put(const T& v) {
    if constexpr (HasMember<T>::value) {
      const_cast<T&>(v).fields(*this);
    } else if constexpr (HasFree<T>::value) {
      fields(*this, const_cast<T&>(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
      length(v.size());
      raw(v.data(), v.size());
    } else if constexpr (std::is_same_v<T, bool>) {
      const char b = v ? 1 : 0;
      raw(&b, 1);
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      raw(&v, sizeof v);
    } else if constexpr (IsOptional<T>::value) {
      put(v.has_value());
      if (v) put(*v);
    } else if constexpr (Container<T>::value || IsSet<T>::value) {
      length(v.size());
      for (const auto& x : v) put(x);
    } else if constexpr (IsMap<T>::value) {
      length(v.size());
      for (const auto& [k, x] : v) {
        put(k);
        put(x);
      }
    } else if constexpr (IsTuple<T>::value) {
      std::apply([this](const auto&... x) { (put(x), ...); }, v);
    } else {
      static_assert(std::is_trivially_copyable_v<T>, "a type the partial cannot write");
      length(sizeof(T));
      raw(&v, sizeof v);
    }
  }

  std::string out_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t size) : at_(data), end_(data + size), begin_(data) {}

  template <class... T>
  void operator()(T&... values) {
    (get(values), ...);
  }
  bool done() const { return at_ == end_; }
  // A count read by a fields() of its own: never more things of `least` bytes than are left.
  void check_count(std::size_t n, std::size_t least) const {
    if (n > static_cast<std::size_t>(end_ - at_) / std::max<std::size_t>(least, 1)) {
      fail("a length of " + std::to_string(n) + " past the end");
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(what + " (at byte " + std::to_string(at_ - begin_) + ")");
  }

 private:
  void raw(void* p, std::size_t n) {
    if (static_cast<std::size_t>(end_ - at_) < n) fail("cut short");
    std::memcpy(p, at_, n);
    at_ += n;
  }
  // A count of things each at least `least` bytes: never more than the bytes left could hold.
  std::size_t length(std::size_t least) {
    std::uint64_t n = 0;
    raw(&n, sizeof n);
    if (n > static_cast<std::uint64_t>(end_ - at_) / std::max<std::size_t>(least, 1)) {
      fail("a length of " + std::to_string(n) + " past the end");
    }
    return static_cast<std::size_t>(n);
  }

  template <class T>
  void get(T& v) {
    if constexpr (HasMember<T>::value) {
      v.fields(*this);
    } else if constexpr (HasFree<T>::value) {
      fields(*this, v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      v.resize(length(1));
      raw(v.data(), v.size());
    } else if constexpr (std::is_same_v<T, bool>) {
      char b = 0;
      raw(&b, 1);
      if (b != 0 && b != 1) fail("a bool of " + std::to_string(static_cast<int>(b)));
      v = b == 1;
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      raw(&v, sizeof v);  // an enum's value is checked where it is used (the checksum first)
    } else if constexpr (IsOptional<T>::value) {
      bool present = false;
      get(present);
      if (present) {
        get(v.emplace());
      } else {
        v.reset();
      }
    } else if constexpr (Container<T>::value) {
      v.clear();
      v.resize(length(1));
      for (auto& x : v) get(x);
    } else if constexpr (IsSet<T>::value) {
      v.clear();
      for (std::size_t n = length(1); n > 0; --n) {
        typename T::key_type k{};
        get(k);
        v.insert(v.end(), std::move(k));
      }
    } else if constexpr (IsMap<T>::value) {
      v.clear();
      for (std::size_t n = length(1); n > 0; --n) {
        typename T::key_type k{};
        get(k);
        get(v[k]);
      }
    } else if constexpr (IsTuple<T>::value) {
      std::apply([this](auto&... x) { (get(x), ...); }, v);
    } else {
      static_assert(std::is_trivially_copyable_v<T>, "a type the partial cannot read");
      std::uint64_t size = 0;
      raw(&size, sizeof size);
      if (size != sizeof(T)) {
        fail("a value of " + std::to_string(size) + " bytes where this vxperf's is " +
             std::to_string(sizeof(T)));
      }
      raw(&v, sizeof v);
    }
  }

  const char* at_;
  const char* end_;
  const char* begin_;
};

}  // namespace vxperf::analysis::partial_io
