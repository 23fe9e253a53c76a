// The reading walk of the field tables (record_fields.h), written once for every parser: a JSON
// object back into its struct, each field by its rule (its default when absent, its checks), a
// wrong one a FieldError naming it.
//
// `Obj` is one parser's view of a JSON object:
//   - DomObject (schema/json_dom.h): simdjson's DOM, fields found by key in any order; what
//     replay, `vxperf trace` and a records line the fast path gives up on are read with;
//   - LineObject (analysis/line_object.h): the line's text read straight, fields taken in the
//     order the writer wrote them; the records files' fast path.
// Each rule asks its object for its key once (`find`: present and not null) and converts the value
// with the object's own checks (`number`, `integer`, `boolean`, `string`), so that every parser
// says the same thing of the same mistake.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/json.h"
#include "schema/record_fields.h"
#include "vxperf/cost_model.h"
#include "vxperf/peak.h"

// Each rule is inlined into its table's walk: the key is then a literal, so that its length and
// its compare with the key at the fast path's cursor fold into a few instructions.
#define VXPERF_RULE [[gnu::always_inline]] inline

namespace vxperf::internal {

inline std::string quoted(std::string_view key) { return "\"" + std::string(key) + "\""; }

// "cuda:3" -> 3; what has no readable index after its colon reads as 0.
int device_index_of(const std::string& device);

template <class Obj>
class FieldReader {
 public:
  using Value = typename Obj::Value;

  explicit FieldReader(Obj& o) : o_(o) {}

  Obj& object() { return o_; }

  // The caller has read the tag already (it chose the table); a cursor steps over it.
  VXPERF_RULE void tag(const char* key, const char*) { o_.skip(key); }

  VXPERF_RULE void number(const char* key, double& value) {
    Value v;
    if (!o_.find(key, v)) fail(quoted(key) + " must be a number");
    value = Obj::number(v, key);
  }
  VXPERF_RULE void number(const char* key, double& value, double fallback) {
    Value v;
    value = o_.find(key, v) ? Obj::number(v, key) : fallback;
  }
  template <class T>
  VXPERF_RULE void integer(const char* key, T& value) {
    Value v;
    if (!o_.find(key, v)) fail(quoted(key) + " must be an integer");
    value = static_cast<T>(Obj::integer(v, key));
  }
  template <class T, class D>
  VXPERF_RULE void integer(const char* key, T& value, D fallback) {
    value = static_cast<T>(integer_or(key, static_cast<std::int64_t>(fallback)));
  }
  template <class T>
  VXPERF_RULE void count(const char* key, T& value) {
    std::int64_t v = 0;
    integer(key, v);
    value = static_cast<T>(not_negative(v, key));
  }
  template <class T, class D>
  VXPERF_RULE void count(const char* key, T& value, D fallback) {
    value = static_cast<T>(not_negative(integer_or(key, static_cast<std::int64_t>(fallback)), key));
  }
  VXPERF_RULE void small_int(const char* key, int& value, int fallback) {
    std::int64_t v = integer_or(key, fallback);
    if (v < 0 || v > 1000000) fail(quoted(key) + " is out of range");
    value = static_cast<int>(v);
  }
  // Absent: the member keeps what it holds.
  VXPERF_RULE void bytes(const char* key, std::uint64_t& value) {
    Value v;
    if (o_.find(key, v))
      value = static_cast<std::uint64_t>(not_negative(Obj::integer(v, key), key));
  }
  VXPERF_RULE void boolean(const char* key, bool& value, bool fallback) {
    Value v;
    value = o_.find(key, v) ? Obj::boolean(v, key) : fallback;
  }
  VXPERF_RULE void string(const char* key, std::string& value) { value = string_or(key, {}); }

  VXPERF_RULE void nullable(const char* key, std::optional<double>& value) {
    Value v;
    value = o_.find(key, v) ? std::optional<double>(Obj::number(v, key)) : std::nullopt;
  }
  VXPERF_RULE void optional(const char* key, std::optional<double>& value) {
    nullable(key, value);
  }
  // Absent: empty (what a reading into a kept struct relies on: replay's device readings).
  template <class T>
  VXPERF_RULE void optional_count(const char* key, std::optional<T>& value) {
    value.reset();
    Value v;
    if (o_.find(key, v)) value = static_cast<T>(not_negative(Obj::integer(v, key), key));
  }
  void optional_string(const char* key, std::optional<std::string>& value) {
    value.reset();
    Value v;
    if (o_.find(key, v)) value = Obj::string(v, key);
  }
  void optional_strings(const char* key, std::optional<std::vector<std::string>>& values,
                        const char* what) {
    values.reset();
    Value v;
    if (!o_.find(key, v)) return;
    std::vector<std::string> read;
    strings_of(v, read, what);
    values = std::move(read);
  }
  VXPERF_RULE void unless(const char* key, double& value, double fallback) {
    number(key, value, fallback);
  }
  VXPERF_RULE void flag(const char* key, bool& value) { boolean(key, value, false); }
  // Absent: kept; present: a density in (0, 1].
  void density(const char* key, double& value) {
    Value v;
    if (!o_.find(key, v)) return;
    value = Obj::number(v, key);
    if (!valid_density(value)) fail(quoted(key) + " must be in (0, 1]");
  }
  // Absent: kept; present: a known dtype's name.
  void dtype(const char* key, Dtype& value) {
    std::optional<Dtype> read;
    optional_dtype(key, read);
    if (read) value = *read;
  }
  void optional_dtype(const char* key, std::optional<Dtype>& value) {
    Value v;
    if (!o_.find(key, v)) return;
    auto dtype = parse_dtype(Obj::string(v, key));
    if (!dtype) fail(quoted(key) + " is not a known dtype");
    value = dtype;
  }
  void peak_source(const char* key, PeakSource& value, bool) {
    std::string source = string_or(key, "table");
    if (source == "env") {
      value = PeakSource::kEnv;
    } else if (source == "measured") {
      value = PeakSource::kMeasured;
    } else if (source != "table") {
      fail(quoted(key) + " must be table, env or measured");
    }
  }

  // Absent: the fields keep their values.
  template <class Fn>
  void object(const char* key, const char* what, Fn&& fields) {
    Value v;
    if (!o_.find(key, v)) return;
    if (!Obj::is_object(v)) fail(quoted(what) + " must be an object");
    Obj inner = Obj::object(v);
    FieldReader reader(inner);
    fields(reader);
    inner.end();
  }
  template <class S>
  void nullable_object(const char* key, std::optional<S>& value) {
    Value v;
    if (!o_.find(key, v)) return;
    if (!Obj::is_object(v)) fail(quoted(key) + " must be an object or null");
    S read{};
    read_object(v, read);
    value = std::move(read);
  }
  template <class S>
  void optional_object(const char* key, std::optional<S>& value) {
    nullable_object(key, value);
  }
  // A required object of objects, each an element named by its key (`required` false: absent is
  // none).
  template <class S>
  void named_objects(const char* key, std::vector<S>& values, const char* what,
                     bool required = true) {
    Value v;
    if (!o_.find(key, v)) {
      if (!required) return;
      fail(quoted(key) + " must be an object");
    }
    if (!Obj::is_object(v)) fail(quoted(key) + " must be an object");
    values.reserve(values.size() + 4);  // a pipeline's few stages: one allocation
    Obj::fields(v, [&](std::string_view name, Value& element) {
      if (!Obj::is_object(element)) {
        fail(std::string(what) + " " + quoted(name) + " must be an object");
      }
      S read{};
      read.name = std::string(name);
      read_object(element, read);
      values.push_back(std::move(read));
    });
  }
  void named_numbers(const char* key, std::vector<std::pair<std::string, double>>& values) {
    Value v;
    if (!o_.find(key, v) || !Obj::is_object(v)) fail(quoted(key) + " must be an object");
    values.reserve(values.size() + 12);  // the phase table's names: one allocation
    Obj::fields(v, [&](std::string_view name, Value& element) {
      values.emplace_back(std::string(name), Obj::number(element, name));
    });
  }
  // Absent: empty.
  void named_strings(const char* key, std::vector<std::pair<std::string, std::string>>& values) {
    Value v;
    if (!o_.find(key, v)) return;
    if (!Obj::is_object(v)) fail(quoted(key) + " must be an object");
    Obj::fields(v, [&](std::string_view name, Value& element) {
      if (!Obj::is_string(element)) fail(quoted(key) + " must hold strings");
      values.emplace_back(std::string(name), Obj::string(element, name));
    });
  }
  // Absent: empty. `array`: the array's name in errors; `element`: its elements'.
  void numbers(const char* key, std::vector<double>& values, const char* array,
               const char* element) {
    Value v;
    if (!array_of(key, array, v)) return;
    Obj::elements(v, [&](Value& e) { values.push_back(Obj::number(e, element)); });
  }
  void ranks(const char* key, std::vector<int>& values, const char* name) {
    Value v;
    if (!array_of(key, name, v)) return;
    Obj::elements(v, [&](Value& e) {
      std::int64_t rank = Obj::integer(e, name);
      if (rank < 0 || rank > 1000000) fail(quoted(name) + " holds a rank out of range");
      values.push_back(static_cast<int>(rank));
    });
  }
  void strings(const char* key, std::vector<std::string>& values, const char* name) {
    Value v;
    if (array_of(key, name, v)) strings_of(v, values, name);
  }
  template <class A>
  void optional_pair(const char* key, std::optional<std::pair<A, std::uint64_t>>& value,
                     const char* what, const char* first, const char* second) {
    Value v;
    if (!o_.find(key, v)) return;
    if (!Obj::is_object(v)) fail(quoted(what) + " must be an object");
    Obj inner = Obj::object(v);
    FieldReader reader(inner);
    std::pair<A, std::uint64_t> read{};
    reader.small_int(first, read.first, 0);
    reader.bytes(second, read.second);
    inner.end();
    value = read;
  }
  // Fields present together, read when the object says they are (DomObject: the marker is there).
  template <class Fn>
  void group(bool& present, const char* marker, Fn&& fields) {
    present = o_.group_present(marker, fields);
    if (present) fields(*this);
  }
  // "cuda:N" (a malformed index reads as 0) and the readings that come with it.
  void device(const char* key, std::optional<int>& device,
              std::optional<DeviceReadings>& readings) {
    std::string d = string_or(key, {});
    if (d.empty()) return;
    device = device_index_of(d);
    DeviceReadings read;
    describe(*this, read);
    readings = read;
  }
  // Written only: the value is recomputed; a cursor steps over it.
  template <class T>
  VXPERF_RULE void derived(const char* key, const T&) {
    o_.skip(key);
  }

  // A plain field outside any table (an event's own), by the same rules.
  bool has(const char* key) {
    Value v;
    return o_.find(key, v);
  }
  VXPERF_RULE std::int64_t integer_or(const char* key, std::int64_t fallback) {
    Value v;
    return o_.find(key, v) ? Obj::integer(v, key) : fallback;
  }
  VXPERF_RULE std::string string_or(const char* key, const std::string& fallback) {
    Value v;
    return o_.find(key, v) ? Obj::string(v, key) : fallback;
  }

  [[noreturn]] static void fail(const std::string& message) { throw FieldError(message); }

 private:
  static std::int64_t not_negative(std::int64_t v, std::string_view key) {
    if (v < 0) fail(quoted(key) + " must not be negative");
    return v;
  }
  template <class S>
  static void read_object(Value& v, S& into) {
    Obj inner = Obj::object(v);
    FieldReader reader(inner);
    describe(reader, into);
    inner.end();
  }
  bool array_of(const char* key, const char* name, Value& out) {
    if (!o_.find(key, out)) return false;
    if (!Obj::is_array(out)) fail(quoted(name) + " must be an array");
    return true;
  }
  static void strings_of(Value& v, std::vector<std::string>& values, const char* name) {
    Obj::elements(v, [&](Value& e) {
      if (!Obj::is_string(e)) fail(quoted(name) + " must hold strings");
      values.push_back(Obj::string(e, name));
    });
  }

  Obj& o_;
};

}  // namespace vxperf::internal

#undef VXPERF_RULE
