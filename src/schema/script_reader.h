// Event scripts (docs/EVENT_SCRIPTS.md) read a line at a time, each line an event whose fields are
// read by the field tables' rules (schema/json_dom.h): what replay and `vxperf trace` read with. A
// wrong field is a ScriptError naming the line.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
#include <string>

#include "schema/json_dom.h"
#include "vxperf/script_error.h"

namespace vxperf::internal {

class ScriptEvent {
 public:
  ScriptEvent(simdjson::dom::object json, int line) : json_(json), line_(line), fields_(json) {}

  int line() const { return line_; }
  simdjson::dom::object json() const { return json_; }
  [[noreturn]] void fail(const std::string& message) const { throw ScriptError(line_, message); }

  // "ev": what the event is.
  std::string kind() const;
  bool has(const char* key) const {
    return checked([&](DomFields& f) { return f.has(key); });
  }
  double number(const char* key) const {
    return checked([&](DomFields& f) { return f.number(key); });
  }
  std::optional<double> optional_number(const char* key) const {
    return checked([&](DomFields& f) { return f.optional_number(key); });
  }
  std::int64_t integer(const char* key, std::int64_t fallback) const {
    return checked([&](DomFields& f) { return f.integer(key, fallback); });
  }
  std::int64_t count(const char* key, std::int64_t fallback) const {
    return checked([&](DomFields& f) { return f.count(key, fallback); });
  }
  bool boolean(const char* key, bool fallback) const {
    return checked([&](DomFields& f) { return f.boolean(key, fallback); });
  }
  std::string string(const char* key, const std::string& fallback = {}) const {
    return checked([&](DomFields& f) { return f.string(key, fallback); });
  }
  // What the event's fields say of `value`, through its field table (record_fields.h): what is
  // absent keeps its value.
  template <class T, class... Args>
  void read(T& value, Args... args) const {
    checked([&](DomFields& f) {
      f.read(value, args...);
      return 0;
    });
  }
  // The same of the object under `key` (a layout's "parallel"): `what` must be an object.
  template <class T>
  void read_object(const char* key, T& value) const {
    simdjson::dom::element e;
    if (json_.at_key(key).get(e) != simdjson::SUCCESS || !e.is_object()) {
      fail(quoted(key) + " must be an object");
    }
    checked([&](DomFields&) {
      DomFields inner{simdjson::dom::object(e)};
      inner.read(value);
      return 0;
    });
  }

 private:
  template <class Fn>
  auto checked(Fn&& read) const -> decltype(read(std::declval<DomFields&>())) {
    try {
      return read(fields_);
    } catch (const FieldError& e) {
      fail(e.what());
    }
  }

  simdjson::dom::object json_;
  int line_;
  mutable DomFields fields_;  // a lookup moves its cursor
};

// Each event of `script` in turn: blank lines skipped; a last line without its newline that is not
// complete JSON (a writer killed mid-line) said to `torn` with its number and skipped; any other
// line that is no JSON object a ScriptError. Returns the number of the last line read.
int read_script(std::istream& script, const std::function<void(const ScriptEvent&)>& event,
                const std::function<void(int line)>& torn);

}  // namespace vxperf::internal
