// A JSON object read by simdjson's On-Demand API as the field tables' reading walk
// (schema/field_reader.h) asks for its fields: the records files' fast path.
//
// On-Demand reads an object once, front to back. The writer wrote the fields in the table's order,
// so the walk takes them as they come: the field asked for is the one at the cursor, or it is
// absent. That holds only for lines as vxperf writes them; the object gives up (GiveUp) wherever it
// could differ from the DOM walk (schema/json_dom.h): a field left behind when the object ends (an
// unknown or out-of-order key), a key with escapes, a value of an unexpected type, a number it
// would convert differently, malformed JSON. The records reader then reads the line again with the
// DOM walk, which gives the answer and the message every reader gives. A line read to its end
// without giving up is therefore read as the DOM walk reads it.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "analysis/decimal_digits.h"
#include "schema/row_walk.h"

namespace vxperf::analysis {

// The fast path cannot tell what the DOM walk would: read the line that way.
struct GiveUp {};

class OnDemandObject {
 public:
  using Value = simdjson::ondemand::value;

  explicit OnDemandObject(simdjson::ondemand::object o) {
    if (o.begin().get(it_) != simdjson::SUCCESS || o.end().get(end_) != simdjson::SUCCESS) {
      throw GiveUp{};
    }
    load();
  }

  // The field when it is at the cursor and not null; else it is absent (or the line out of order,
  // which end() finds).
  [[gnu::always_inline]] bool find(const char* key, Value& out) {
    if (taken_) advance();
    if (at_end_ || !key_.unsafe_is_equal(std::string_view(key))) return false;
    taken_ = true;
    out = field_.value();
    bool null = false;
    if (out.is_null().get(null) != simdjson::SUCCESS) throw GiveUp{};
    return !null;
  }
  // A field the walk does not keep (a tag, a derived value): stepped over, its value checked as
  // the DOM parser would.
  [[gnu::always_inline]] void skip(const char* key) {
    Value v;
    if (!find(key, v)) return;
    simdjson::ondemand::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) throw GiveUp{};
    switch (type) {
      case simdjson::ondemand::json_type::number:
        number(v, key);
        return;
      case simdjson::ondemand::json_type::string:
        string(v, key);
        return;
      case simdjson::ondemand::json_type::boolean:
        boolean(v, key);
        return;
      default:
        throw GiveUp{};
    }
  }
  // Every field was taken: else one was out of order or unknown.
  void end() {
    if (taken_) advance();
    if (!at_end_) throw GiveUp{};
  }
  // A group is present when the field at the cursor is one of its rows'.
  template <class Fn>
  bool group_present(const char*, Fn& fields) {
    if (taken_) advance();
    if (at_end_) return false;
    bool hit = false;
    internal::walk_rows(fields, [&](const internal::Row& row) {
      if (!hit && row.key != nullptr && !row.nested) hit = key_.unsafe_is_equal(row.key);
    });
    return hit;
  }

  static double number(Value& v, std::string_view) {
    double d = 0;
    if (plain_number(v.raw_json_token(), d)) return d;  // the value is stepped over unread
    if (!exact_digits(v) || v.get_double().get(d) != simdjson::SUCCESS) throw GiveUp{};
    return d;
  }
  // An int64 as written, else an integral float within int64 (as the DOM walk reads them).
  static std::int64_t integer(Value& v, std::string_view) {
    std::int64_t i = 0;
    if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
    double d = 0;
    if (!exact_digits(v) || v.get_double().get(d) != simdjson::SUCCESS || d != std::floor(d) ||
        !(std::fabs(d) < 9.2e18)) {
      throw GiveUp{};
    }
    return static_cast<std::int64_t>(d);
  }
  static bool boolean(Value& v, std::string_view) {
    bool b = false;
    if (v.get_bool().get(b) != simdjson::SUCCESS) throw GiveUp{};
    return b;
  }
  static std::string string(Value& v, std::string_view) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) throw GiveUp{};
    return std::string(s);
  }
  static bool is_object(Value& v) { return type_of(v) == simdjson::ondemand::json_type::object; }
  static bool is_array(Value& v) { return type_of(v) == simdjson::ondemand::json_type::array; }
  static bool is_string(Value& v) { return type_of(v) == simdjson::ondemand::json_type::string; }
  static OnDemandObject object(Value& v) {
    simdjson::ondemand::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) throw GiveUp{};
    return OnDemandObject(o);
  }
  // fn(std::string_view key, Value& value) for each field of an object, in order.
  template <class Fn>
  static void fields(Value& v, Fn&& fn) {
    simdjson::ondemand::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) throw GiveUp{};
    for (auto result : o) {
      simdjson::ondemand::field field;
      std::string_view key;
      if (std::move(result).get(field) != simdjson::SUCCESS ||
          field.unescaped_key().get(key) != simdjson::SUCCESS) {
        throw GiveUp{};
      }
      fn(key, field.value());
    }
  }
  // fn(Value& element) for each element of an array, in order.
  template <class Fn>
  static void elements(Value& v, Fn&& fn) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS) throw GiveUp{};
    for (auto result : a) {
      Value element;
      if (std::move(result).get(element) != simdjson::SUCCESS) throw GiveUp{};
      fn(element);
    }
  }

 private:
  // Whether the On-Demand parser reads this number as the DOM parser does. simdjson 3.0's
  // On-Demand double parser, given more than 19 significant digits after a "0.", loses track of
  // the mantissa and returns a wrong value (found by the records fuzzer:
  // 0.029506054089493681120363247205 read as 4.9e-12), where the DOM parser is right. And it reads
  // an integer past uint64 as a double (37025000000000000005 as 3.7025e19) where the DOM parser
  // refuses the line (a big integer). Writers of records (vxperf, Python's repr) give at most 17
  // significant digits and integers far inside int64: a number past either limit gives up.
  static bool exact_digits(Value& v) {
    std::string_view token = v.raw_json_token();
    if (token.size() <= 18) return true;  // 18 digits at the most, whatever the form
    // A point within 20 characters leaves at most 19 digits, none of an integer: the common long
    // number (a double with 17 significant digits), told without the walk below.
    if (token.size() <= 20 && std::memchr(token.data(), '.', token.size()) != nullptr) return true;
    int digits = 0, significant = 0;
    bool integral = true, leading = true;  // zeros before the first other digit are not significant
    for (char c : token) {
      if (c == 'e' || c == 'E') {
        integral = false;
        break;
      }
      if (c == '.') integral = false;
      if (c < '0' || c > '9') continue;
      ++digits;
      leading = leading && c == '0';
      if (!leading) ++significant;
    }
    return integral ? digits <= 18 : significant <= 19;
  }
  // A number as the writers of records write nearly all of theirs, -?(0|[1-9][0-9]*)(.[0-9]+)?
  // with at most 19 digits and nothing after it, read eight digits at a time (get_double reads a
  // digit at a time: the larger part of reading a records line) and converted correctly rounded
  // (decimal_digits.h), so the double is get_double's; false (another form) leaves it to
  // get_double.
  static bool plain_number(std::string_view token, double& out) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(token.data());
    const std::uint8_t* end = p + token.size();
    bool negative = p != end && *p == '-';
    p += negative;
    const std::uint8_t* first = p;
    std::uint64_t i = 0;
    auto is_digit = [](std::uint8_t c) { return static_cast<std::uint8_t>(c - '0') <= 9; };
    auto digits = [&] {
      for (; end - p >= 8 && eight_digits(p); p += 8) i = i * 100000000 + eight_digits_value(p);
      for (; p != end && is_digit(*p); ++p) i = i * 10 + (*p - '0');
    };
    if (p == end || !is_digit(*p)) return false;
    if (*p == '0') {
      ++p;  // a zero is an integer part alone
    } else {
      digits();
    }
    std::int64_t exponent = 0;
    std::ptrdiff_t point = 0;
    if (p != end && *p == '.') {
      const std::uint8_t* fraction = ++p;
      digits();
      if (p == fraction) return false;
      exponent = fraction - p;
      point = 1;
    }
    if (p != end || p - first - point > 19) return false;
    if (point == 0 && i == 0) {
      out = 0.0;  // "-0" is the integer 0 to the DOM parser: no sign
      return true;
    }
    return decimal_to_double(i, exponent, negative, token, out);
  }
  static simdjson::ondemand::json_type type_of(Value& v) {
    simdjson::ondemand::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) throw GiveUp{};
    return type;
  }
  void advance() {
    ++it_;
    load();
  }
  // The field at the cursor (its key checked at once, its value left for the walk).
  void load() {
    taken_ = false;
    at_end_ = !(it_ != end_);
    if (at_end_) return;
    if ((*it_).get(field_) != simdjson::SUCCESS) throw GiveUp{};
    key_ = field_.key();
  }

  simdjson::ondemand::object_iterator it_, end_;
  simdjson::ondemand::field field_;
  simdjson::ondemand::raw_json_string key_;
  bool at_end_ = true, taken_ = false;
};

}  // namespace vxperf::analysis
