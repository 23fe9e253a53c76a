// A JSON object parsed whole by simdjson's DOM parser, as the field tables' reading walk
// (schema/field_reader.h) reads it: any field found by its key in about one compare, values
// converted with the checks and messages every reader gives. Event scripts (replay, `vxperf
// trace`) are read with it, and so is a records line the fast path (analysis/line_object.h) gives
// up on.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "schema/field_reader.h"

namespace vxperf::internal {

// An object's fields by key. The field tables read the fields in the order the writer wrote them,
// so the one asked for is nearly always at the cursor (read again) or just after it: one key
// compared. But many optional fields are absent from a given line, and scanning the whole object
// for each of those was a fifth of the time: at the first key not found at the cursor, a small
// open-addressing table over the object's first kMaxFields fields is built, which then answers
// any lookup, absent or not, in about one key compare (an object holding more, not a record the
// writer wrote, is searched past them the plain way). A key the object repeats reads as its first
// occurrence unless the cursor stands on a later one.
class FieldIndex {
 public:
  explicit FieldIndex(simdjson::dom::object o)
      : object_(o), cursor_(o.begin()), end_(o.end()), rest_(end_) {}

  // The cursor's two keys here, inline (nearly every lookup); the rest out of line.
  [[gnu::always_inline]] bool find(std::string_view key, simdjson::dom::element& out) {
    if (cursor_ != end_) {
      if (cursor_.key_equals(key)) return at_cursor(out);
      auto next = cursor_;
      if (++next != end_ && next.key_equals(key)) {
        cursor_ = next;
        return at_cursor(out);
      }
    }
    return find_elsewhere(key, out);
  }

 private:
  // Records' objects hold up to about 30 fields: the table stays at most half full.
  static constexpr std::size_t kMaxFields = 32, kSlotBits = 6, kSlots = 1u << kSlotBits;
  static_assert(kMaxFields * 2 <= kSlots && kMaxFields < 256);

  struct Field {
    std::string_view key;
    simdjson::dom::object::iterator at;
  };

  bool find_elsewhere(std::string_view key, simdjson::dom::element& out);
  bool at_cursor(simdjson::dom::element& out) const {
    out = cursor_.value();
    return true;
  }
  void build();
  static std::size_t slot_of(std::string_view key);

  simdjson::dom::object object_;
  simdjson::dom::object::iterator cursor_, end_;
  simdjson::dom::object::iterator rest_;  // the first field not indexed: the end but for a larger
  bool indexed_ = false;
  std::uint8_t slots_[kSlots];  // 0: empty, else the field's index + 1 (set by build)
  // Left uninitialized until build (most objects never need it): a union does not construct.
  union {
    Field fields_[kMaxFields];
  };
};

class DomObject {
 public:
  using Value = simdjson::dom::element;

  explicit DomObject(simdjson::dom::object o) : index_(o) {}

  // The field when present and not null.
  [[gnu::always_inline]] bool find(std::string_view key, Value& out) {
    return index_.find(key, out) && !out.is_null();
  }
  void skip(const char*) {}
  void end() {}
  template <class Fn>
  bool group_present(const char* marker, Fn&) {
    Value v;
    return find(marker, v);
  }

  static double number(Value v, std::string_view field);
  static std::int64_t integer(Value v, std::string_view field);
  static bool boolean(Value v, std::string_view field);
  static std::string string(Value v, std::string_view field);
  static bool is_object(Value v) { return v.is_object(); }
  static bool is_array(Value v) { return v.is_array(); }
  static bool is_string(Value v) { return v.is_string(); }
  static DomObject object(Value v) { return DomObject(simdjson::dom::object(v)); }
  // fn(std::string_view key, Value& value) for each field of an object, in order.
  template <class Fn>
  static void fields(Value v, Fn&& fn) {
    for (auto field : simdjson::dom::object(v)) {
      Value value = field.value;
      fn(field.key, value);
    }
  }
  // fn(Value& element) for each element of an array, in order.
  template <class Fn>
  static void elements(Value v, Fn&& fn) {
    for (Value element : simdjson::dom::array(v)) fn(element);
  }

 private:
  FieldIndex index_;
};

// A DOM object and its reading walk together: what an event's own fields are read through, with
// the messages of the field tables' rules.
class DomFields {
 public:
  explicit DomFields(simdjson::dom::object o) : object_(o), json_(o), reader_(json_) {}
  DomFields(const DomFields&) = delete;  // the reader holds the object by reference
  DomFields& operator=(const DomFields&) = delete;

  simdjson::dom::object json() const { return object_; }
  FieldReader<DomObject>& reader() { return reader_; }

  bool has(const char* key) { return reader_.has(key); }
  double number(const char* key) {
    double v = 0;
    reader_.number(key, v);
    return v;
  }
  std::optional<double> optional_number(const char* key) {
    std::optional<double> v;
    reader_.nullable(key, v);
    return v;
  }
  std::int64_t integer(const char* key, std::int64_t fallback) {
    return reader_.integer_or(key, fallback);
  }
  std::int64_t count(const char* key, std::int64_t fallback) {
    std::int64_t v = 0;
    reader_.count(key, v, fallback);
    return v;
  }
  bool boolean(const char* key, bool fallback) {
    bool v = false;
    reader_.boolean(key, v, fallback);
    return v;
  }
  std::string string(const char* key, const std::string& fallback = {}) {
    return reader_.string_or(key, fallback);
  }
  // Through its field table (record_fields.h): what the object does not say keeps its value.
  template <class T, class... Args>
  void read(T& value, Args... args) {
    describe(reader_, value, args...);
  }

 private:
  simdjson::dom::object object_;
  DomObject json_;
  FieldReader<DomObject> reader_;
};

}  // namespace vxperf::internal
