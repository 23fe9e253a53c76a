// The reading walk of the field tables (record_fields.h): a JSON object back into its struct, each
// field by its rule (its default when absent, its checks), a wrong one a FieldError naming it.
// Used by the records reader (`vxperf report`), replay and `vxperf trace`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schema/json_fields.h"
#include "schema/record_fields.h"
#include "vxperf/peak.h"

namespace vxperf::internal {

class Reader {
 public:
  explicit Reader(const Json& json) : f_(json) {}

  const JsonFields& fields() const { return f_; }

  void tag(const char*, const char*) {}

  void number(const char* key, double& value) { value = f_.number(key); }
  void number(const char* key, double& value, double fallback) { value = f_.number(key, fallback); }
  template <class T>
  void integer(const char* key, T& value) {
    value = static_cast<T>(f_.integer(key));
  }
  template <class T, class D>
  void integer(const char* key, T& value, D fallback) {
    value = static_cast<T>(f_.integer(key, static_cast<std::int64_t>(fallback)));
  }
  template <class T>
  void count(const char* key, T& value) {
    std::int64_t v = f_.integer(key);
    if (v < 0) fail(quoted(key) + " must not be negative");
    value = static_cast<T>(v);
  }
  template <class T, class D>
  void count(const char* key, T& value, D fallback) {
    value = static_cast<T>(f_.count(key, static_cast<std::int64_t>(fallback)));
  }
  void small_int(const char* key, int& value, int fallback);
  // Absent: the member keeps what it holds.
  void bytes(const char* key, std::uint64_t& value) {
    if (f_.has(key)) value = static_cast<std::uint64_t>(f_.count(key, 0));
  }
  void boolean(const char* key, bool& value, bool fallback) { value = f_.boolean(key, fallback); }
  void string(const char* key, std::string& value) { value = f_.string(key); }

  void nullable(const char* key, std::optional<double>& value) { value = f_.optional_number(key); }
  void optional(const char* key, std::optional<double>& value) { value = f_.optional_number(key); }
  // Absent: empty (what a reading into a kept struct relies on: replay's device readings).
  template <class T>
  void optional_count(const char* key, std::optional<T>& value) {
    value.reset();
    if (f_.has(key)) value = static_cast<T>(f_.count(key, 0));
  }
  void optional_string(const char* key, std::optional<std::string>& value) {
    value.reset();
    if (f_.has(key)) value = f_.string(key);
  }
  void optional_strings(const char* key, std::optional<std::vector<std::string>>& values,
                        const char* what) {
    values.reset();
    if (!f_.has(key)) return;
    std::vector<std::string> read;
    strings(key, read, what);
    values = std::move(read);
  }
  void unless(const char* key, double& value, double fallback) { value = f_.number(key, fallback); }
  void flag(const char* key, bool& value) { value = f_.boolean(key, false); }
  // Absent: kept; present: a density in (0, 1].
  void density(const char* key, double& value);
  // Absent: kept; present: a known dtype's name.
  void dtype(const char* key, Dtype& value);
  void optional_dtype(const char* key, std::optional<Dtype>& value);
  void peak_source(const char* key, PeakSource& value, bool has_peak);

  // Absent: the fields keep their values.
  template <class Fn>
  void object(const char* key, const char* what, Fn&& fields) {
    const Json* o = f_.find(key);
    if (o == nullptr) return;
    if (!o->is_object()) fail(quoted(what) + " must be an object");
    Reader inner(*o);
    fields(inner);
  }
  template <class S>
  void nullable_object(const char* key, std::optional<S>& value) {
    const Json* o = f_.find(key);
    if (o == nullptr) return;
    if (!o->is_object()) fail(quoted(key) + " must be an object or null");
    S read{};
    Reader inner(*o);
    describe(inner, read);
    value = std::move(read);
  }
  template <class S>
  void optional_object(const char* key, std::optional<S>& value) {
    nullable_object(key, value);
  }
  // A required object of objects, each an element named by its key.
  template <class S>
  void named_objects(const char* key, std::vector<S>& values, const char* what) {
    const Json& o = f_.object(key);
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (!it.value().is_object()) {
        fail(std::string(what) + " " + quoted(it.key()) + " must be an object");
      }
      S read{};
      read.name = it.key();
      Reader inner(it.value());
      describe(inner, read);
      values.push_back(std::move(read));
    }
  }
  void named_numbers(const char* key, std::vector<std::pair<std::string, double>>& values);
  // Absent: empty.
  void named_strings(const char* key, std::vector<std::pair<std::string, std::string>>& values);
  // Absent: empty. `array`: the array's name in errors; `element`: its elements'.
  void numbers(const char* key, std::vector<double>& values, const char* array,
               const char* element);
  void ranks(const char* key, std::vector<int>& values, const char* name);
  void strings(const char* key, std::vector<std::string>& values, const char* name);
  template <class A>
  void optional_pair(const char* key, std::optional<std::pair<A, std::uint64_t>>& value,
                     const char* what, const char* first, const char* second) {
    const Json* o = f_.find(key);
    if (o == nullptr) return;
    if (!o->is_object()) fail(quoted(what) + " must be an object");
    Reader inner(*o);
    std::pair<A, std::uint64_t> read{};
    inner.small_int(first, read.first, 0);
    inner.bytes(second, read.second);
    value = read;
  }
  template <class Fn>
  void group(bool& present, const char* marker, Fn&& fields) {
    present = f_.find(marker) != nullptr;
    if (present) fields(*this);
  }
  // "cuda:N" (a malformed index reads as 0) and the readings that come with it.
  void device(const char* key, std::optional<int>& device, std::optional<DeviceReadings>& readings);
  template <class T>
  void derived(const char*, const T&) {}

  [[noreturn]] static void fail(const std::string& message) { JsonFields::fail(message); }

 private:
  static std::string quoted(const std::string& key) { return "\"" + key + "\""; }

  JsonFields f_;
};

// A record line's object into its record (FieldError on a wrong field; "kind" is the caller's).
RequestRecord read_request(const Json& json);
TrainWindowRecord read_window(const Json& json);

}  // namespace vxperf::internal
