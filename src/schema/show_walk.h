// The rows of a field table (record_fields.h) that say how they are shown (a Show,
// vxperf/field_show.h), with the value the record holds: what the report, the Prometheus series
// and the experiment trackers are made from, so that a field shows where its row says with no
// code of its own there.
//
// Every object a Show may sit in is entered (an object, a group, the readings of a device row, an
// optional or nullable object even when empty: its values then read as absent), so that a walk
// over a default record lists every row. Named objects (stages) and arrays are not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "schema/record_fields.h"
#include "vxperf/field_show.h"

namespace vxperf::internal {

// What a record holds for one shown row.
struct ShownValue {
  std::optional<double> number;                       // a number; empty: absent
  const std::vector<std::string>* strings = nullptr;  // a list (Fold::kList); nullptr: absent
  bool integral = false;                              // the member is an integer
  bool list = false;                                  // the member is a list of strings
};

// fn(const char* object, const Show& show, const ShownValue& value) for each row with a Show,
// `object` the key of the object it sits in ("" at the top, "throughput").
template <class Fn>
class ShowWalk {
 public:
  explicit ShowWalk(Fn& fn) : fn_(fn) {}

  // Every rule: a row whose key is a Show is visited, any other is not.
  template <class K, class... A>
  void tag(const K&, A&&...) {}
  template <class K, class... A>
  void number(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void integer(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void count(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void small_int(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void bytes(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void nullable(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void optional(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void optional_count(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void optional_strings(const K& key, A&&... a) {
    row(key, a...);
  }
  template <class K, class... A>
  void unless(const K& key, A&&... a) {
    row(key, a...);
  }
  // Rules of no number to show: booleans, strings, enums, arrays, named objects.
  template <class... A>
  void boolean(A&&...) {}
  template <class... A>
  void flag(A&&...) {}
  template <class... A>
  void string(A&&...) {}
  template <class... A>
  void optional_string(A&&...) {}
  template <class... A>
  void density(A&&...) {}
  template <class... A>
  void dtype(A&&...) {}
  template <class... A>
  void optional_dtype(A&&...) {}
  template <class... A>
  void peak_source(A&&...) {}
  template <class... A>
  void named_objects(A&&...) {}
  template <class... A>
  void named_numbers(A&&...) {}
  template <class... A>
  void named_strings(A&&...) {}
  template <class... A>
  void numbers(A&&...) {}
  template <class... A>
  void ranks(A&&...) {}
  template <class... A>
  void strings(A&&...) {}
  template <class... A>
  void optional_pair(A&&...) {}
  template <class... A>
  void derived(A&&...) {}

  template <class F>
  void object(const char* key, const char*, F&& fields) {
    Inside inside(*this, key, present_);
    fields(*this);
  }
  template <class S>
  void nullable_object(const char* key, const std::optional<S>& value) {
    static const S absent{};
    Inside inside(*this, key, present_ && value.has_value());
    describe(*this, value ? *value : absent);
  }
  template <class S>
  void optional_object(const char* key, const std::optional<S>& value) {
    nullable_object(key, value);
  }
  template <class F>
  void group(bool present, const char*, F&& fields) {
    Inside inside(*this, object_, present_ && present);
    fields(*this);
  }
  void device(const char*, const std::optional<int>&,
              const std::optional<DeviceReadings>& readings) {
    static const DeviceReadings absent{};
    Inside inside(*this, object_, present_ && readings.has_value());
    describe(*this, readings ? *readings : absent);
  }

 private:
  // The object walked into, and whether the record holds it; restored on the way out.
  struct Inside {
    Inside(ShowWalk& w, const char* object, bool present)
        : w_(w), object_(w.object_), present_(w.present_) {
      w.object_ = object;
      w.present_ = present;
    }
    ~Inside() {
      w_.object_ = object_;
      w_.present_ = present_;
    }
    Inside(const Inside&) = delete;
    Inside& operator=(const Inside&) = delete;
    ShowWalk& w_;
    const char* object_;
    bool present_;
  };

  template <class M, class... Rest>
  void row(const Show& show, const M& member, Rest&&...) {
    ShownValue v;
    if constexpr (std::is_arithmetic_v<M>) {
      v.integral = std::is_integral_v<M>;
      if (present_) v.number = static_cast<double>(member);
    } else {  // an optional
      using Value = typename M::value_type;
      v.integral = std::is_integral_v<Value>;
      v.list = !std::is_arithmetic_v<Value>;
      if (present_ && member) read(*member, v);
    }
    fn_(object_, show, v);
  }
  template <class... A>
  void row(const char*, A&&...) {}

  template <class T>
  static void read(const T& value, ShownValue& v) {
    if constexpr (std::is_arithmetic_v<T>) {
      v.number = static_cast<double>(value);
    } else {
      v.strings = &value;
    }
  }

  Fn& fn_;
  const char* object_ = "";
  bool present_ = true;
};

// fn(object, show, value) for each row of `value`'s table with a Show.
template <class Record, class Fn>
void walk_shown(const Record& value, Fn&& fn) {
  ShowWalk<std::remove_reference_t<Fn>> walk(fn);
  describe(walk, value);
}

}  // namespace vxperf::internal
