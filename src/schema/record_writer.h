// The writing walk of the field tables (record_fields.h): each field, in order and present as its
// rule says, handed to a RecordVisitor (vxperf/record_walk.h). The JSON line is one such visitor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "schema/record_fields.h"
#include "vxperf/peak.h"
#include "vxperf/record_walk.h"

namespace vxperf::internal {

class Writer {
 public:
  explicit Writer(RecordVisitor& out) : out_(out) {}

  void tag(const char* key, const char* value) { out_.string(key, value); }

  // Plain values; what follows the member (the reader's default) is the reader's.
  template <class T, class... Default>
  void number(const char* key, T& value, Default&&...) {
    out_.number(key, value);
  }
  template <class T, class... Default>
  void integer(const char* key, T& value, Default&&...) {
    whole(key, value);
  }
  template <class T, class... Default>
  void count(const char* key, T& value, Default&&...) {
    whole(key, value);
  }
  template <class T, class D>
  void small_int(const char* key, T& value, D) {
    whole(key, value);
  }
  template <class T>
  void bytes(const char* key, T& value) {
    whole(key, value);
  }
  template <class T, class D>
  void boolean(const char* key, T& value, D) {
    out_.boolean(key, value);
  }
  template <class T>
  void string(const char* key, T& value) {
    out_.string(key, value);
  }

  template <class T>
  void nullable(const char* key, const std::optional<T>& value) {
    if (value) {
      out_.number(key, *value);
    } else {
      out_.null(key);
    }
  }
  template <class T>
  void optional(const char* key, const std::optional<T>& value) {
    if (value) out_.number(key, *value);
  }
  template <class T>
  void optional_count(const char* key, const std::optional<T>& value) {
    if (value) whole(key, *value);
  }
  void optional_string(const char* key, const std::optional<std::string>& value) {
    if (value) out_.string(key, *value);
  }
  void optional_strings(const char* key, const std::optional<std::vector<std::string>>& values,
                        const char* what) {
    if (values) strings(key, *values, what);
  }
  void unless(const char* key, double value, double fallback) {
    if (value != fallback) out_.number(key, value);
  }
  void flag(const char* key, bool value) {
    if (value) out_.boolean(key, true);
  }
  void density(const char* key, double value) { unless(key, value, 1.0); }
  void dtype(const char* key, Dtype value) {
    if (value != Dtype::kBf16) out_.string(key, dtype_name(value));
  }
  void optional_dtype(const char* key, const std::optional<Dtype>& value) {
    if (value) out_.string(key, dtype_name(*value));
  }
  void peak_source(const char* key, PeakSource value, bool has_peak) {
    if (has_peak && value != PeakSource::kTable) out_.string(key, peak_source_name(value));
  }

  template <class Fn>
  void object(const char* key, const char*, Fn&& fields) {
    out_.begin_object(key);
    fields(*this);
    out_.end_object();
  }
  template <class S>
  void nullable_object(const char* key, const std::optional<S>& value) {
    if (value) {
      nested(key, *value);
    } else {
      out_.null(key);
    }
  }
  template <class S>
  void optional_object(const char* key, const std::optional<S>& value) {
    if (value) nested(key, *value);
  }
  template <class S>
  void named_objects(const char* key, const std::vector<S>& values, const char*, bool = true) {
    out_.begin_object(key);
    for (const S& value : values) nested(value.name, value);
    out_.end_object();
  }
  void named_numbers(const char* key, const std::vector<std::pair<std::string, double>>& values) {
    out_.begin_object(key);
    for (const auto& [name, value] : values) out_.number(name, value);
    out_.end_object();
  }
  void named_strings(const char* key,
                     const std::vector<std::pair<std::string, std::string>>& values) {
    out_.begin_object(key);
    for (const auto& [name, value] : values) out_.string(name, value);
    out_.end_object();
  }
  void numbers(const char* key, const std::vector<double>& values, const char*, const char*) {
    out_.begin_array(key);
    for (double value : values) out_.number({}, value);
    out_.end_array();
  }
  void ranks(const char* key, const std::vector<int>& values, const char*) {
    out_.begin_array(key);
    for (int value : values) out_.integer({}, value);
    out_.end_array();
  }
  void strings(const char* key, const std::vector<std::string>& values, const char*) {
    out_.begin_array(key);
    for (const auto& value : values) out_.string({}, value);
    out_.end_array();
  }
  template <class A, class B>
  void optional_pair(const char* key, const std::optional<std::pair<A, B>>& value, const char*,
                     const char* first, const char* second) {
    if (!value) return;
    out_.begin_object(key);
    whole(first, value->first);
    whole(second, value->second);
    out_.end_object();
  }
  template <class Fn>
  void group(bool present, const char*, Fn&& fields) {
    if (present) fields(*this);
  }
  void device(const char* key, const std::optional<int>& device,
              const std::optional<DeviceReadings>& readings) {
    if (!device) return;
    out_.string(key, "cuda:" + std::to_string(*device));
    // A record measured on a device carries its readings, zero when the device could not say.
    const DeviceReadings said = readings.value_or(DeviceReadings{});
    describe(*this, said);
  }
  template <class T>
  void derived(const char* key, T value) {
    if constexpr (std::is_integral_v<T>) {
      whole(key, value);
    } else {
      out_.number(key, value);
    }
  }

 private:
  template <class T>
  void whole(std::string_view key, T value) {
    if constexpr (std::is_unsigned_v<T>) {
      out_.unsigned_integer(key, value);
    } else {
      out_.integer(key, value);
    }
  }
  template <class S>
  void nested(std::string_view key, const S& value) {
    out_.begin_object(key);
    describe(*this, value);
    out_.end_object();
  }

  RecordVisitor& out_;
};

}  // namespace vxperf::internal
