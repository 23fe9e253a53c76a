// Records reader: the JSON lines the records file holds, back into the record structs through
// their field tables (src/schema/record_fields.h), in one streaming pass.
//
// Lines are cut from a fixed buffer of the file (grown only for a longer line) and each is parsed
// with simdjson's DOM parser, whose tape the reading walk below (SimdReader, the same rules and
// messages as schema/record_reader.h's Reader over nlohmann-json) turns into the record. A record
// is handed to the handler and forgotten.
#include "vxperf/records_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <vector>

#include "schema/json_fields.h"
#include "schema/record_fields.h"
#include "vxperf/cost_model.h"
#include "vxperf/peak.h"

namespace vxperf::analysis {
namespace {

namespace dom = simdjson::dom;
using internal::FieldError;

[[noreturn]] void fail(const std::string& message) { throw FieldError(message); }

std::string quoted(std::string_view key) { return "\"" + std::string(key) + "\""; }

double as_number(dom::element e, std::string_view field) {
  double d = 0;
  if (e.get_double().get(d) != simdjson::SUCCESS) fail(quoted(field) + " must be a number");
  if (!std::isfinite(d)) fail(quoted(field) + " must be finite");
  return d;
}

std::int64_t as_integer(dom::element e, std::string_view field) {
  switch (e.type()) {
    case dom::element_type::INT64:
      return std::int64_t(e);
    case dom::element_type::UINT64:
      fail(quoted(field) + " is out of range");  // an int64 is read as INT64
    case dom::element_type::DOUBLE: {
      double d = double(e);
      // Range first: converting a double outside int64's range is undefined behaviour.
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
        return static_cast<std::int64_t>(d);
      }
      break;
    }
    default:
      break;
  }
  fail(quoted(field) + " must be an integer");
}

// An object's fields by key. The field tables read the fields in the order the writer wrote them,
// so the one asked for is nearly always at the cursor (read again) or just after it: one key
// compared. But many optional fields are absent from a given line, and scanning the whole object
// for each of those was a fifth of the time: at the first key not found at the cursor, a small
// open-addressing table over the object's first kMaxFields fields is built, which then answers
// any lookup, absent or not, in about one key compare (an object holding more, not a record the
// writer wrote, is searched past them the plain way). As before, a key the object repeats reads
// as its first occurrence unless the cursor stands on a later one.
class FieldIndex {
 public:
  explicit FieldIndex(dom::object o) : object_(o), cursor_(o.begin()), end_(o.end()), rest_(end_) {}

  // The cursor's two keys here, inline (nearly every lookup); the rest out of line.
  [[gnu::always_inline]] bool find(std::string_view key, dom::element& out) {
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
    dom::object::iterator at;
  };

  [[gnu::noinline]] bool find_elsewhere(std::string_view key, dom::element& out) {
    if (!indexed_) build();
    for (std::size_t s = slot_of(key); slots_[s] != 0; s = (s + 1) % kSlots) {
      const Field& f = fields_[slots_[s] - 1u];
      if (f.key == key) {
        cursor_ = f.at;
        return at_cursor(out);
      }
    }
    for (auto it = rest_; it != end_; ++it) {
      if (it.key_equals(key)) {
        cursor_ = it;
        return at_cursor(out);
      }
    }
    return false;
  }

  bool at_cursor(dom::element& out) const {
    out = cursor_.value();
    return true;
  }

  void build() {
    indexed_ = true;
    std::memset(slots_, 0, sizeof slots_);
    std::size_t size = 0;
    for (auto it = object_.begin(); it != end_; ++it) {
      if (size == kMaxFields) {
        rest_ = it;
        break;
      }
      std::string_view key = it.key();
      std::size_t s = slot_of(key);
      while (slots_[s] != 0 && fields_[slots_[s] - 1u].key != key) s = (s + 1) % kSlots;
      if (slots_[s] != 0) continue;  // a key repeated: the first one is kept
      new (&fields_[size]) Field{key, it};
      slots_[s] = static_cast<std::uint8_t>(++size);
    }
  }

  // Length and three characters: cheap, and enough to tell the schema's keys apart.
  static std::size_t slot_of(std::string_view key) {
    std::size_t n = key.size();
    if (n == 0) return 0;
    auto c = [&](std::size_t i) { return static_cast<unsigned char>(key[i]); };
    std::uint32_t h = static_cast<std::uint32_t>(n);
    h = h * 31 + c(0);
    h = h * 31 + c(n / 2);
    h = h * 31 + c(n - 1);
    return (h * 0x9E3779B1u) >> (32 - kSlotBits);  // the product's top bits mix all of h
  }

  dom::object object_;
  dom::object::iterator cursor_, end_;
  dom::object::iterator rest_;  // the first field not indexed: the end but for a larger object
  bool indexed_ = false;
  std::uint8_t slots_[kSlots];  // 0: empty, else the field's index + 1 (set by build)
  // Left uninitialized until build (most objects never need it): a union does not construct.
  union {
    Field fields_[kMaxFields];
  };
};

// The reading walk of the field tables over one simdjson object: the rules and messages of
// schema/record_reader.h's Reader (a field that is null reads as absent).
class SimdReader {
 public:
  explicit SimdReader(dom::object o) : fields_(o) {}

  void tag(const char*, const char*) {}

  void number(const char* key, double& value) {
    dom::element e;
    if (!find(key, e)) fail(quoted(key) + " must be a number");
    value = as_number(e, key);
  }
  void number(const char* key, double& value, double fallback) {
    dom::element e;
    value = find(key, e) ? as_number(e, key) : fallback;
  }
  template <class T>
  void integer(const char* key, T& value) {
    dom::element e;
    if (!find(key, e)) fail(quoted(key) + " must be an integer");
    value = static_cast<T>(as_integer(e, key));
  }
  template <class T, class D>
  void integer(const char* key, T& value, D fallback) {
    value = static_cast<T>(integer_or(key, static_cast<std::int64_t>(fallback)));
  }
  template <class T>
  void count(const char* key, T& value) {
    std::int64_t v = 0;
    integer(key, v);
    if (v < 0) fail(quoted(key) + " must not be negative");
    value = static_cast<T>(v);
  }
  template <class T, class D>
  void count(const char* key, T& value, D fallback) {
    value = static_cast<T>(count_or(key, static_cast<std::int64_t>(fallback)));
  }
  void small_int(const char* key, int& value, int fallback) {
    std::int64_t v = integer_or(key, fallback);
    if (v < 0 || v > 1000000) fail(quoted(key) + " is out of range");
    value = static_cast<int>(v);
  }
  void bytes(const char* key, std::uint64_t& value) {
    if (has(key)) value = static_cast<std::uint64_t>(count_or(key, 0));
  }
  void boolean(const char* key, bool& value, bool fallback) {
    dom::element e;
    if (!find(key, e)) {
      value = fallback;
      return;
    }
    if (!e.is_bool()) fail(quoted(key) + " must be true or false");
    value = bool(e);
  }
  void string(const char* key, std::string& value) { value = string_or(key, {}); }

  void nullable(const char* key, std::optional<double>& value) {
    dom::element e;
    value = find(key, e) ? std::optional<double>(as_number(e, key)) : std::nullopt;
  }
  void optional(const char* key, std::optional<double>& value) { nullable(key, value); }
  template <class T>
  void optional_count(const char* key, std::optional<T>& value) {
    if (has(key)) value = static_cast<T>(count_or(key, 0));
  }
  void optional_string(const char* key, std::optional<std::string>& value) {
    value.reset();
    if (has(key)) value = string_or(key, {});
  }
  void optional_strings(const char* key, std::optional<std::vector<std::string>>& values,
                        const char* what) {
    values.reset();
    if (!has(key)) return;
    std::vector<std::string> read;
    strings(key, read, what);
    values = std::move(read);
  }
  void unless(const char* key, double& value, double fallback) { number(key, value, fallback); }
  void flag(const char* key, bool& value) { boolean(key, value, false); }
  void density(const char* key, double& value) {
    if (!has(key)) return;
    number(key, value);
    if (!valid_density(value)) fail(quoted(key) + " must be in (0, 1]");
  }
  void dtype(const char* key, Dtype& value) {
    std::optional<Dtype> read;
    optional_dtype(key, read);
    if (read) value = *read;
  }
  void optional_dtype(const char* key, std::optional<Dtype>& value) {
    if (!has(key)) return;
    auto dtype = parse_dtype(string_or(key, {}));
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

  template <class Fn>
  void object(const char* key, const char* what, Fn&& fields) {
    dom::element e;
    if (!find(key, e)) return;
    if (!e.is_object()) fail(quoted(what) + " must be an object");
    SimdReader inner{dom::object(e)};
    fields(inner);
  }
  template <class S>
  void nullable_object(const char* key, std::optional<S>& value) {
    dom::element e;
    if (!find(key, e)) return;
    if (!e.is_object()) fail(quoted(key) + " must be an object or null");
    S read{};
    SimdReader inner{dom::object(e)};
    internal::describe(inner, read);
    value = std::move(read);
  }
  template <class S>
  void optional_object(const char* key, std::optional<S>& value) {
    nullable_object(key, value);
  }
  template <class S>
  void named_objects(const char* key, std::vector<S>& values, const char* what) {
    dom::object o = required_object(key);
    values.reserve(values.size() + o.size());  // one allocation, not one per doubling
    for (auto field : o) {
      if (!field.value.is_object()) {
        fail(std::string(what) + " " + quoted(field.key) + " must be an object");
      }
      S read{};
      read.name = std::string(field.key);
      SimdReader inner{dom::object(field.value)};
      internal::describe(inner, read);
      values.push_back(std::move(read));
    }
  }
  void named_numbers(const char* key, std::vector<std::pair<std::string, double>>& values) {
    dom::object o = required_object(key);
    values.reserve(values.size() + o.size());
    for (auto field : o) {
      values.emplace_back(std::string(field.key), as_number(field.value, field.key));
    }
  }
  void named_strings(const char* key, std::vector<std::pair<std::string, std::string>>& values) {
    dom::element e;
    if (!find(key, e)) return;
    if (!e.is_object()) fail(quoted(key) + " must be an object");
    for (auto field : dom::object(e)) {
      if (!field.value.is_string()) fail(quoted(key) + " must hold strings");
      values.emplace_back(std::string(field.key), std::string(std::string_view(field.value)));
    }
  }
  void numbers(const char* key, std::vector<double>& values, const char* array,
               const char* element) {
    dom::element a;
    if (!array_of(key, array, a)) return;
    for (auto n : dom::array(a)) values.push_back(as_number(n, element));
  }
  void ranks(const char* key, std::vector<int>& values, const char* name) {
    dom::element a;
    if (!array_of(key, name, a)) return;
    for (auto n : dom::array(a)) {
      std::int64_t rank = as_integer(n, name);
      if (rank < 0 || rank > 1000000) fail(quoted(name) + " holds a rank out of range");
      values.push_back(static_cast<int>(rank));
    }
  }
  void strings(const char* key, std::vector<std::string>& values, const char* name) {
    dom::element a;
    if (!array_of(key, name, a)) return;
    for (auto n : dom::array(a)) {
      if (!n.is_string()) fail(quoted(name) + " must hold strings");
      values.emplace_back(std::string_view(n));
    }
  }
  template <class A>
  void optional_pair(const char* key, std::optional<std::pair<A, std::uint64_t>>& value,
                     const char* what, const char* first, const char* second) {
    dom::element e;
    if (!find(key, e)) return;
    if (!e.is_object()) fail(quoted(what) + " must be an object");
    SimdReader inner{dom::object(e)};
    std::pair<A, std::uint64_t> read{};
    inner.small_int(first, read.first, 0);
    inner.bytes(second, read.second);
    value = read;
  }
  template <class Fn>
  void group(bool& present, const char* marker, Fn&& fields) {
    present = has(marker);
    if (present) fields(*this);
  }
  // "cuda:N" (a malformed index reads as 0) and the readings that come with it.
  void device(const char* key, std::optional<int>& device,
              std::optional<DeviceReadings>& readings) {
    std::string d = string_or(key, {});
    if (d.empty()) return;
    auto colon = d.rfind(':');
    int n = 0;
    if (colon != std::string::npos) {
      try {
        n = std::stoi(d.substr(colon + 1));
      } catch (const std::exception&) {
        n = 0;
      }
    }
    device = n;
    DeviceReadings read;
    internal::describe(*this, read);
    readings = read;
  }
  template <class T>
  void derived(const char*, const T&) {}

 private:
  // The field when present and not null.
  [[gnu::always_inline]] bool find(const char* key, dom::element& out) const {
    return fields_.find(key, out) && !out.is_null();
  }
  bool has(const char* key) const {
    dom::element e;
    return find(key, e);
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback) const {
    dom::element e;
    return find(key, e) ? as_integer(e, key) : fallback;
  }
  std::int64_t count_or(const char* key, std::int64_t fallback) const {
    std::int64_t v = integer_or(key, fallback);
    if (v < 0) fail(quoted(key) + " must not be negative");
    return v;
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    dom::element e;
    if (!find(key, e)) return fallback;
    if (!e.is_string()) fail(quoted(key) + " must be a string");
    return std::string(std::string_view(e));
  }
  dom::object required_object(const char* key) const {
    dom::element e;
    if (!find(key, e) || !e.is_object()) fail(quoted(key) + " must be an object");
    return dom::object(e);
  }
  bool array_of(const char* key, const char* name, dom::element& out) const {
    if (!find(key, out)) return false;
    if (!out.is_array()) fail("\"" + std::string(name) + "\" must be an array");
    return true;
  }

  mutable FieldIndex fields_;  // a lookup moves its cursor
};

bool blank(const char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    char c = data[i];
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

// One read: the parser (its buffers kept from line to line), the records handed over so far and
// the state of the file being read.
class Stream {
 public:
  Stream(RecordHandler& handler, const ReadOptions& options)
      : handler_(handler), options_(options) {}

  std::int64_t records() const { return records_; }
  bool have_problem() const { return !first_problem_.empty(); }
  [[noreturn]] void throw_first_problem() const {
    throw InputError(first_problem_file_, first_problem_line_, first_problem_);
  }

  void begin_file(const std::string& name) {
    name_ = name;
    bad_lines_ = 0;
    last_bad_line_ = 0;
    backwards_ = 0;
    last_backwards_line_ = 0;
    last_ts_.clear();
  }

  void end_file() {
    if (bad_lines_ > 1) {
      handler_.warning(name_ + ": " + std::to_string(bad_lines_ - 1) +
                       " more lines skipped as not records (the last at line " +
                       std::to_string(last_bad_line_) + ")");
    }
    if (backwards_ > 1) {
      handler_.warning(name_ + ": " + std::to_string(backwards_ - 1) +
                       " more records whose ts goes backwards (the last at line " +
                       std::to_string(last_backwards_line_) + ")");
    }
  }

  // `data` has simdjson's padding readable after `size` bytes. `complete`: it ended with a newline.
  void line(const char* data, std::size_t size, bool complete, std::int64_t line) {
    if (size == 0 || blank(data, size)) return;
    dom::element doc;
    auto error = parser_.parse(data, size, /*realloc_if_needed=*/false).get(doc);
    if (error == simdjson::MEMALLOC) throw std::bad_alloc();
    if (error != simdjson::SUCCESS) {
      // Only a last line without its newline can be a writer that died mid-write.
      if (!complete) {
        handler_.warning(name_ + ":" + std::to_string(line) +
                         ": torn last line skipped (not complete JSON)");
        return;
      }
      return bad(line, "not valid JSON");
    }
    if (!doc.is_object()) return bad(line, "a record must be a JSON object");
    try {
      dom::object o(doc);
      dom::element kind;
      if (o.at_key("kind").get(kind) != simdjson::SUCCESS || !kind.is_string()) {
        fail("a record needs a string \"kind\"");
      }
      std::string_view k(kind);
      if (k == "request") {
        RequestRecord r;
        SimdReader reader(o);
        internal::describe(reader, r);
        check_order(0, r.rank, r.ts, line);
        ++records_;
        handler_.request(r);
      } else if (k == "train_window") {
        TrainWindowRecord w;
        SimdReader reader(o);
        internal::describe(reader, w);
        check_order(1, w.rank, w.ts, line);
        ++records_;
        handler_.window(w);
      } else {
        fail("unknown record kind " + quoted(k) + " (expected request or train_window)");
      }
    } catch (const FieldError& e) {
      bad(line, e.what());
    }
  }

 private:
  void bad(std::int64_t line, const std::string& message) {
    if (!options_.skip_bad_lines) throw InputError(name_, static_cast<int>(line), message);
    if (first_problem_.empty()) {
      first_problem_ = message;
      first_problem_file_ = name_;
      first_problem_line_ = static_cast<int>(line);
    }
    if (bad_lines_++ == 0) {
      handler_.warning(name_ + ":" + std::to_string(line) + ": " + message + " (line skipped)");
    }
    last_bad_line_ = line;
  }

  // Each rank's records of a kind are written in the order of their timestamps.
  void check_order(int kind, int rank, double ts, std::int64_t line) {
    auto [it, first] = last_ts_.emplace(std::make_pair(kind, rank), ts);
    if (first) return;
    if (ts < it->second) {
      if (backwards_++ == 0) {
        char text[160];
        std::snprintf(text, sizeof text,
                      ": \"ts\" %.17g of rank %d is before the previous record's %.17g "
                      "(read as it is)",
                      ts, rank, it->second);
        handler_.warning(name_ + ":" + std::to_string(line) + text);
      }
      last_backwards_line_ = line;
    }
    it->second = ts;
  }

  RecordHandler& handler_;
  const ReadOptions& options_;
  dom::parser parser_;
  std::int64_t records_ = 0;
  std::string name_;
  std::int64_t bad_lines_ = 0, last_bad_line_ = 0;
  std::int64_t backwards_ = 0, last_backwards_line_ = 0;
  std::map<std::pair<int, int>, double> last_ts_;
  std::string first_problem_, first_problem_file_;
  int first_problem_line_ = 0;
};

[[noreturn]] void out_of_memory(const Stream& stream, const std::string& name, std::int64_t line) {
  throw InputError(name, static_cast<int>(line),
                   "out of memory after " + std::to_string(stream.records()) +
                       " records: too much to summarize at once (split the input)");
}

// Reads `fd` a buffer at a time, cutting it into lines.
void read_fd(int fd, const std::string& name, Stream& stream) {
  // 256 KiB, not 1 MiB: a fresh buffer is zeroed per file (a thousand small rank files: a
  // thousand times), and the bytes read stay in the core's L2 cache until parsed. (One buffer
  // kept across files measured slower: the kernel's copy into it took several times longer.)
  constexpr std::size_t kChunk = 256 << 10;
  std::int64_t line = 0;
  stream.begin_file(name);
  try {
    std::vector<char> buffer(kChunk + simdjson::SIMDJSON_PADDING);
    std::size_t begin = 0, end = 0;
    bool eof = false;
    for (;;) {
      std::size_t capacity = buffer.size() - simdjson::SIMDJSON_PADDING;
      char* base = buffer.data();
      // Every whole line in the buffer.
      while (begin < end) {
        auto* newline = static_cast<char*>(std::memchr(base + begin, '\n', end - begin));
        if (newline == nullptr) break;
        auto size = static_cast<std::size_t>(newline - (base + begin));
        stream.line(base + begin, size, true, ++line);
        begin += size + 1;
      }
      if (eof) {
        if (begin < end) stream.line(base + begin, end - begin, false, ++line);
        break;
      }
      if (begin > 0) {
        std::memmove(base, base + begin, end - begin);
        end -= begin;
        begin = 0;
      }
      if (end == capacity) {
        // A line longer than the buffer: twice the room (running out of memory names the line).
        std::vector<char> larger(capacity * 2 + simdjson::SIMDJSON_PADDING);
        std::memcpy(larger.data(), buffer.data(), end);
        buffer.swap(larger);
        continue;
      }
      ssize_t n = ::read(fd, buffer.data() + end, capacity - end);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw InputError(name, 0, std::string("read error: ") + std::strerror(errno));
      }
      if (n == 0) {
        eof = true;
      } else {
        end += static_cast<std::size_t>(n);
      }
    }
  } catch (const std::bad_alloc&) {
    out_of_memory(stream, name, line + 1);
  }
  stream.end_file();
}

void read_stream(std::istream& in, const std::string& name, Stream& stream,
                 std::int64_t first_line) {
  std::string text;
  std::int64_t line = first_line - 1;
  stream.begin_file(name);
  try {
    internal::ThrowOnBadRead throw_on_bad_read(in);  // a line too long for memory is said as such
    while (++line, std::getline(in, text)) {
      // getline stops at the end without a newline only on a last line cut short.
      bool complete = !in.eof();
      std::size_t size = text.size();
      text.append(simdjson::SIMDJSON_PADDING, '\0');
      stream.line(text.data(), size, complete, line);
    }
  } catch (const std::bad_alloc&) {
    text = std::string();  // give back the line before saying so
    out_of_memory(stream, name, line);
  }
  stream.end_file();
}

// Keeps every record: the RecordSet of read_records.
class Collector : public RecordHandler {
 public:
  explicit Collector(RecordSet& into) : into_(into) {}
  void request(const RequestRecord& r) override { into_.requests.push_back(r); }
  void window(const TrainWindowRecord& w) override { into_.windows.push_back(w); }
  void warning(const std::string& text) override { into_.warnings.push_back(text); }

 private:
  RecordSet& into_;
};

}  // namespace

void stream_records(std::istream& in, const std::string& name, RecordHandler& handler,
                    const ReadOptions& options) {
  Stream stream(handler, options);
  read_stream(in, name, stream, options.first_line);
  if (stream.records() == 0 && stream.have_problem()) stream.throw_first_problem();
}

void stream_record_files(const std::vector<std::string>& paths, RecordHandler& handler,
                         const ReadOptions& options) {
  Stream stream(handler, options);
  for (const auto& path : paths) {
    if (path == "-") {
      read_fd(STDIN_FILENO, "<stdin>", stream);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      throw InputError(path, 0, "is a directory, not a records file");
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    read_fd(fd, path, stream);
  }
  if (stream.records() == 0 && stream.have_problem()) stream.throw_first_problem();
}

void read_records(std::istream& in, const std::string& name, RecordSet& into,
                  const ReadOptions& options) {
  Collector collector(into);
  stream_records(in, name, collector, options);
}

RecordSet read_record_files(const std::vector<std::string>& paths, const ReadOptions& options) {
  RecordSet set;
  Collector collector(set);
  stream_record_files(paths, collector, options);
  return set;
}

}  // namespace vxperf::analysis
