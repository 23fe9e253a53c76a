// A JSON object read straight from a records line's text as the field tables' reading walk
// (schema/field_reader.h) asks for its fields: the records files' fast path.
//
// The walk takes the fields in the order the writer wrote them: the field asked for is the one at
// the cursor, or it is absent. The line is read once, front to back, a byte at a time where it
// must be and eight at a time in strings and digits, without simdjson's structural pass or its
// iterator (the two were a third of a report's instructions). It reads a strict subset of JSON:
// keys and strings without escapes, control characters or bytes past ASCII, numbers as JSON writes
// them, and nothing nested where the walk does not expect it. Anything else, and wherever the
// result could differ from the DOM walk (schema/json_dom.h) (a field left behind when the object
// ends, a value of an unexpected type, a number with more digits than a double needs, a byte after
// the object), gives up (GiveUp): the records reader then reads the line with the DOM walk, which
// gives the answer and the message every reader gives. A line read to its end without giving up
// is therefore valid JSON, read as the DOM walk reads it.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "analysis/decimal_digits.h"
#include "schema/row_walk.h"

namespace vxperf::analysis {

// The fast path cannot tell what the DOM walk would: read the line that way.
struct GiveUp {};

class LineObject {
 public:
  // Where the walk is in the line: shared by an object and the objects inside it. Bytes past
  // `end` are readable (simdjson's padding) but not the line's.
  struct Cursor {
    const char* p;
    const char* end;
  };
  // A value at the cursor: converting it moves the cursor past it.
  struct Value {
    Cursor* c = nullptr;
    const char* at = nullptr;
  };

  // The object at the cursor (after its whitespace).
  explicit LineObject(Cursor& c) : c_(&c) {
    if (c.p == c.end || *c.p != '{') throw GiveUp{};
    ++c.p;
    space(c);
    if (c.p != c.end && *c.p == '}') {
      ++c.p;
      at_end_ = true;
      return;
    }
    load();
  }

  // The field when it is at the cursor and not null; else it is absent (or the line out of order,
  // which end() finds).
  [[gnu::always_inline]] bool find(const char* key, Value& out) {
    if (taken_) advance();
    if (at_end_ || !key_is(key, std::strlen(key))) return false;  // a literal's length: folded
    take(std::strlen(key));
    if (*value_ == 'n') {  // null: absent, stepped over
      literal(c_, "null");
      return false;
    }
    out = Value{c_, value_};
    return true;
  }
  // A field the walk does not keep (a tag, a derived value): stepped over, its value checked as
  // the DOM parser would.
  [[gnu::always_inline]] void skip(const char* key) {
    Value v;
    if (!find(key, v)) return;
    switch (*v.at) {
      case '"':
        string(v, key);
        return;
      case 't':
      case 'f':
        boolean(v, key);
        return;
      default:
        number(v, key);
        return;
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
      if (!hit && row.key != nullptr && !row.nested) hit = key_is(row.key, std::strlen(row.key));
    });
    return hit;
  }

  static double number(Value& v, std::string_view) {
    double d = 0;
    v.c->p = number_at(v.at, v.c->end, d);
    return d;
  }
  // An int64 as written, else an integral float within int64 (as the DOM walk reads them).
  static std::int64_t integer(Value& v, std::string_view) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.at);
    const auto* end = reinterpret_cast<const std::uint8_t*>(v.c->end);
    const bool negative = p != end && *p == '-';
    p += negative;
    const std::uint8_t* first = p;
    std::uint64_t i = 0;  // wraps past 19 digits, which give up
    if (p != end && *p == '0') {
      ++p;
    } else {
      for (; p != end && digit(*p); ++p) i = i * 10 + (*p - '0');
    }
    // A plain integer of up to 18 digits, the form writers use; another form (a fraction, an
    // exponent) an integral double within int64, as the DOM walk takes it; longer ones its.
    if (p != first && p - first <= 18 && (p == end || (*p != '.' && *p != 'e' && *p != 'E'))) {
      v.c->p = reinterpret_cast<const char*>(p);
      const auto value = static_cast<std::int64_t>(i);
      return negative ? -value : value;
    }
    if (p == first || (p - first > 18 && (p == end || (*p != '.' && *p != 'e' && *p != 'E')))) {
      throw GiveUp{};
    }
    const double d = number(v, {});
    if (d != std::floor(d) || !(std::fabs(d) < 9.2e18)) throw GiveUp{};
    return static_cast<std::int64_t>(d);
  }
  static bool boolean(Value& v, std::string_view) {
    if (*v.at == 't') {
      literal(v.c, "true");
      return true;
    }
    if (*v.at != 'f') throw GiveUp{};
    literal(v.c, "false");
    return false;
  }
  static std::string string(Value& v, std::string_view) { return std::string(text(v)); }
  // A string's bytes in the line (no copy), the cursor moved past it.
  static std::string_view text(Value& v) { return string_at(*v.c, v.at); }
  static bool is_object(Value& v) { return *v.at == '{'; }
  static bool is_array(Value& v) { return *v.at == '['; }
  static bool is_string(Value& v) { return *v.at == '"'; }
  static LineObject object(Value& v) {
    v.c->p = v.at;
    return LineObject(*v.c);
  }
  // fn(std::string_view key, Value& value) for each field of an object, in order.
  template <class Fn>
  static void fields(Value& v, Fn&& fn) {
    Cursor& c = *v.c;
    if (*v.at != '{') throw GiveUp{};
    c.p = v.at + 1;
    space(c);
    if (c.p == c.end) throw GiveUp{};  // torn: no element to read
    if (*c.p == '}') {
      ++c.p;
      return;
    }
    for (;;) {
      const std::string_view key = string_at(c, c.p);
      colon(c);
      Value element{&c, c.p};
      fn(key, element);
      if (c.p == element.at) throw GiveUp{};  // not read: not a value the walk expects
      if (!next(c, '}')) return;
    }
  }
  // fn(Value& element) for each element of an array, in order.
  template <class Fn>
  static void elements(Value& v, Fn&& fn) {
    Cursor& c = *v.c;
    if (*v.at != '[') throw GiveUp{};
    c.p = v.at + 1;
    space(c);
    if (c.p == c.end) throw GiveUp{};  // torn: no element to read
    if (*c.p == ']') {
      ++c.p;
      return;
    }
    for (;;) {
      Value element{&c, c.p};
      fn(element);
      if (c.p == element.at) throw GiveUp{};
      if (!next(c, ']')) return;
    }
  }

 private:
  static bool digit(std::uint8_t c) { return static_cast<std::uint8_t>(c - '0') <= 9; }
  // JSON's whitespace: space, tab, line feed, carriage return.
  static bool blank(char x) { return x == ' ' || x == '\t' || x == '\n' || x == '\r'; }
  static void space(Cursor& c) {
    while (c.p < c.end && static_cast<unsigned char>(*c.p) <= ' ' && blank(*c.p)) ++c.p;
  }
  // After a value: a comma and the next one's start (true), or the container's close (false).
  static bool next(Cursor& c, char close) {
    // The writers' forms first: ", " (Python's) or "," (vxperf's) before a key or value.
    if (c.end - c.p >= 3 && c.p[0] == ',') {
      if (c.p[1] == ' ' && static_cast<unsigned char>(c.p[2]) > ' ') {
        c.p += 2;
        return true;
      }
      if (static_cast<unsigned char>(c.p[1]) > ' ') {
        c.p += 1;
        return true;
      }
    }
    space(c);
    if (c.p == c.end) throw GiveUp{};
    const char at = *c.p++;
    if (at == close) return false;
    if (at != ',') throw GiveUp{};
    space(c);
    if (c.p == c.end) throw GiveUp{};
    return true;
  }
  // The key's colon and the whitespace around it; the cursor at the value, which is there.
  static void colon(Cursor& c) {
    // The writers' forms first: ": " (Python's) or ":" (vxperf's).
    if (c.end - c.p >= 3 && c.p[0] == ':') {
      if (c.p[1] == ' ' && static_cast<unsigned char>(c.p[2]) > ' ') {
        c.p += 2;
        return;
      }
      if (static_cast<unsigned char>(c.p[1]) > ' ') {
        c.p += 1;
        return;
      }
    }
    space(c);
    if (c.p == c.end || *c.p != ':') throw GiveUp{};
    ++c.p;
    space(c);
    if (c.p == c.end) throw GiveUp{};
  }
  static void literal(Cursor* c, const char (&word)[5]) {
    if (c->end - c->p < 4 || std::memcmp(c->p, word, 4) != 0) throw GiveUp{};
    c->p += 4;
  }
  static void literal(Cursor* c, const char (&word)[6]) {
    if (c->end - c->p < 5 || std::memcmp(c->p, word, 5) != 0) throw GiveUp{};
    c->p += 5;
  }
  // The string at `at` (its opening quote), the cursor moved past it: its bytes as they are, as
  // none needs unescaping (a backslash, a control character or a byte past ASCII gives up).
  static std::string_view string_at(Cursor& c, const char* at) {
    if (at == c.end || *at != '"') throw GiveUp{};
    const char* s = at + 1;
    const char* p = s;
    for (;; p += 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);  // within the line or its padding
      constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
      auto zero = [&](std::uint64_t x) { return (x - kOnes) & ~x & kHigh; };
      // The first byte that is a quote, a backslash, below 0x20 or past ASCII (the lowest flag
      // of each test is exact, so the lowest of them all is).
      const std::uint64_t stop = zero(w ^ (kOnes * '"')) | zero(w ^ (kOnes * '\\')) |
                                 ((w - kOnes * 0x20) & ~w & kHigh) | (w & kHigh);
      if (stop != 0) {
        p += __builtin_ctzll(stop) / 8;
        break;
      }
      if (c.end - p <= 8) throw GiveUp{};  // no closing quote within the line
    }
    if (p >= c.end || *p != '"') throw GiveUp{};
    c.p = p + 1;
    return std::string_view(s, static_cast<std::size_t>(p - s));
  }
  // The number at `at` into `out`; where it ends. JSON's form, -?(0|[1-9][0-9]*)(.[0-9]+)?
  // ([eE][+-]?[0-9]+)?: without an exponent and with at most 19 digits (nearly every number a
  // writer writes) its digits read eight at a time and converted correctly rounded
  // (decimal_to_double.h); with an exponent, through std::from_chars, correctly rounded too, as
  // the DOM parser's. More significant digits than 19, an integer of more than 18, or a value
  // past a double's range: the DOM walk's.
  static const char* number_at(const char* at, const char* line_end, double& out) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(at);
    const auto* end = reinterpret_cast<const std::uint8_t*>(line_end);
    const bool negative = p != end && *p == '-';
    p += negative;
    const std::uint8_t* first = p;
    std::uint64_t i = 0;
    auto digits = [&] {
      for (; end - p >= 8 && eight_digits(p); p += 8) i = i * 100000000 + eight_digits_value(p);
      for (; p != end && digit(*p); ++p) i = i * 10 + (*p - '0');
    };
    if (p == end || !digit(*p)) throw GiveUp{};
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
      if (p == fraction) throw GiveUp{};
      exponent = fraction - p;
      point = 1;
    }
    const std::ptrdiff_t count = p - first - point;  // digits, leading zeros and all
    if (p != end && (*p == 'e' || *p == 'E')) {
      return exponent_form(at, first, p, end, out);
    }
    const std::string_view token(
        at, static_cast<std::size_t>(p - reinterpret_cast<const std::uint8_t*>(at)));
    if (count <= 19) {
      if (point == 0 && i == 0) {
        out = 0.0;  // "-0" is the integer 0 to the DOM parser: no sign
      } else if (!decimal_to_double(i, exponent, negative, token, out)) {
        throw GiveUp{};
      }
      return reinterpret_cast<const char*>(p);
    }
    // Longer: leading zeros of a fraction ("0.000...") are not significant.
    if (point == 0 || significant(first, p) > 19) throw GiveUp{};
    convert(token, out);
    return reinterpret_cast<const char*>(p);
  }
  // A number with an exponent, from `at` (its sign), `first` (its first digit) and `e` (its
  // 'e'), its mantissa read already.
  static const char* exponent_form(const char* at, const std::uint8_t* first, const std::uint8_t* e,
                                   const std::uint8_t* end, double& out) {
    const std::uint8_t* p = e + 1;
    if (p != end && (*p == '+' || *p == '-')) ++p;
    const std::uint8_t* digits = p;
    while (p != end && digit(*p)) ++p;
    if (p == digits || significant(first, e) > 19) throw GiveUp{};
    convert(std::string_view(
                at, static_cast<std::size_t>(p - reinterpret_cast<const std::uint8_t*>(at))),
            out);
    return reinterpret_cast<const char*>(p);
  }
  // The significant digits in [first, last): those after any leading zeros.
  static int significant(const std::uint8_t* first, const std::uint8_t* last) {
    int n = 0;
    bool leading = true;
    for (const std::uint8_t* p = first; p != last; ++p) {
      if (!digit(*p)) continue;
      leading = leading && *p == '0';
      n += leading ? 0 : 1;
    }
    return n;
  }
  static void convert(std::string_view token, double& out) {
    const char* end = token.data() + token.size();
    auto [at, error] = std::from_chars(token.data(), end, out);
    if (error != std::errc() || at != end) throw GiveUp{};
  }

  // Past the value of the field at the cursor (stepped over if the walk left it, a scalar only),
  // to the next field or the object's end.
  void advance() {
    if (c_->p == value_) step_over();
    if (next(*c_, '}')) {
      load();
    } else {
      at_end_ = true;
      taken_ = false;
    }
  }
  // A value the walk found and did not read (a field it only asked about): a scalar is checked
  // as the DOM parser would; a container is the DOM walk's.
  void step_over() {
    Value v{c_, value_};
    switch (*value_) {
      case '"':
        (void)string_at(*c_, value_);
        return;
      case 't':
      case 'f':
        (void)boolean(v, {});
        return;
      case 'n':
        literal(c_, "null");
        return;
      default:
        (void)number(v, {});
        return;
    }
  }
  // The field at the cursor: its key's opening quote; the key is read when the walk asks for it.
  void load() {
    taken_ = false;
    if (c_->p == c_->end || *c_->p != '"') throw GiveUp{};
    key_ = c_->p + 1;
  }
  // Whether the key at the cursor is `key` (`n` bytes): its bytes and then its closing quote. A
  // table's key has no quote, backslash or control character, so no other key reads as it.
  [[gnu::always_inline]] bool key_is(const char* key, std::size_t n) const {
    return c_->end - key_ > static_cast<std::ptrdiff_t>(n) && key_[n] == '"' &&
           std::memcmp(key_, key, n) == 0;
  }
  // The field whose key is `n` bytes taken: the cursor at its value.
  void take(std::size_t n) {
    taken_ = true;
    c_->p = key_ + n + 1;
    colon(*c_);
    value_ = c_->p;
  }

  Cursor* c_;
  const char* key_ = nullptr;  // the key at the cursor, after its opening quote
  const char* value_ = nullptr;
  bool at_end_ = false, taken_ = false;
};

}  // namespace vxperf::analysis
