// The value walk of the field tables (record_fields.h): every number a record holds, with the key
// of the object it sits in ("" at the top, "dit", "throughput"), whatever the JSON presence rules
// say (a group is entered, the readings are visited with or without a device). What the
// Prometheus series are mapped from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "schema/record_fields.h"

namespace vxperf::internal {

// fn(const char* object, const char* key, double value) for each number.
template <class Fn>
class ValueWalk {
 public:
  explicit ValueWalk(Fn& fn) : fn_(fn) {}

  void tag(const char*, const char*) {}
  template <class T, class... Rest>
  void number(const char* key, const T& value, Rest&&...) {
    fn_(object_, key, static_cast<double>(value));
  }
  template <class T, class... Rest>
  void integer(const char* key, const T& value, Rest&&...) {
    fn_(object_, key, static_cast<double>(value));
  }
  template <class T, class... Rest>
  void count(const char* key, const T& value, Rest&&...) {
    fn_(object_, key, static_cast<double>(value));
  }
  template <class T, class D>
  void small_int(const char* key, const T& value, D) {
    fn_(object_, key, static_cast<double>(value));
  }
  template <class T>
  void bytes(const char* key, const T& value) {
    fn_(object_, key, static_cast<double>(value));
  }
  template <class... Rest>
  void boolean(Rest&&...) {}
  template <class... Rest>
  void flag(Rest&&...) {}
  template <class... Rest>
  void string(Rest&&...) {}
  template <class T>
  void nullable(const char* key, const std::optional<T>& value) {
    if (value) fn_(object_, key, static_cast<double>(*value));
  }
  template <class T>
  void optional(const char* key, const std::optional<T>& value) {
    nullable(key, value);
  }
  template <class T>
  void optional_count(const char* key, const std::optional<T>& value) {
    nullable(key, value);
  }
  void unless(const char* key, double value, double) { fn_(object_, key, value); }
  void density(const char* key, double value) { fn_(object_, key, value); }
  template <class... Rest>
  void optional_string(Rest&&...) {}
  template <class... Rest>
  void optional_strings(Rest&&...) {}
  template <class... Rest>
  void dtype(Rest&&...) {}
  template <class... Rest>
  void optional_dtype(Rest&&...) {}
  template <class... Rest>
  void peak_source(Rest&&...) {}
  template <class F>
  void object(const char* key, const char*, F&& fields) {
    const char* outer = object_;
    object_ = key;
    fields(*this);
    object_ = outer;
  }
  template <class S>
  void nullable_object(const char* key, const std::optional<S>& value) {
    if (!value) return;
    const char* outer = object_;
    object_ = key;
    describe(*this, *value);
    object_ = outer;
  }
  template <class S>
  void optional_object(const char* key, const std::optional<S>& value) {
    nullable_object(key, value);
  }
  template <class... Rest>
  void named_objects(Rest&&...) {}
  template <class... Rest>
  void named_numbers(Rest&&...) {}
  template <class... Rest>
  void named_strings(Rest&&...) {}
  template <class... Rest>
  void numbers(Rest&&...) {}
  template <class... Rest>
  void ranks(Rest&&...) {}
  template <class... Rest>
  void strings(Rest&&...) {}
  template <class... Rest>
  void optional_pair(Rest&&...) {}
  template <class F>
  void group(bool, const char*, F&& fields) {
    fields(*this);
  }
  void device(const char*, const std::optional<int>&,
              const std::optional<DeviceReadings>& readings) {
    if (readings) describe(*this, *readings);
  }
  template <class... Rest>
  void derived(Rest&&...) {}

 private:
  Fn& fn_;
  const char* object_ = "";
};

// Calls fn(object, key, value) for every number `record` holds.
template <class Record, class Fn>
void walk_values(const Record& record, Fn&& fn) {
  ValueWalk<std::remove_reference_t<Fn>> walk(fn);
  describe(walk, record);
}

}  // namespace vxperf::internal
