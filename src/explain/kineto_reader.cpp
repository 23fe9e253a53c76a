// Kineto trace reader: zlib reads plain and gzip files alike a buffer at a time; a scanner that
// knows only strings and brackets finds the `traceEvents` array and cuts it into its elements;
// each element is parsed on its own by simdjson's On-Demand API and forgotten. Nothing holds more
// than one element's text, so memory follows the rows kept, not the file.
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/strings.h"
#include "explain/hta_rules.h"
#include "explain/kineto_trace.h"

namespace vxperf::explain {
namespace {

using internal::starts_with;

namespace od = simdjson::ondemand;

// Deeper than any event Kineto writes (an event, its args, a list of shapes): an element nested
// deeper is skipped and counted, never handed to the parser.
constexpr int kMaxEventDepth = 64;
constexpr std::size_t kReadBuffer = 1 << 20;
constexpr std::uint64_t kMaxEvents = std::uint64_t{1} << 31;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// HTA's rank: the first line matching `"rank":\s+(\d+)`, matched byte by byte as the text streams
// (a line ends a match: \s never spans lines there, since HTA matches line by line).
class RankMatcher {
 public:
  bool found() const { return found_; }
  int rank() const { return static_cast<int>(value_); }

  void feed(char c) {
    static constexpr std::string_view kKey = "\"rank\":";
    if (found_) return;
    if (pos_ < kKey.size()) {
      if (c == kKey[pos_]) {
        ++pos_;
      } else {
        pos_ = c == '"' ? 1 : 0;
      }
      return;
    }
    if (pos_ == kKey.size()) {  // at least one space before the digits
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        pos_ = kKey.size() + 1;
      } else {
        pos_ = c == '"' ? 1 : 0;
      }
      return;
    }
    if (c >= '0' && c <= '9') {
      digits_ = true;
      if (value_ < 1000000000) value_ = value_ * 10 + (c - '0');
      return;
    }
    if (digits_) {
      found_ = true;
      return;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') return;
    pos_ = c == '"' ? 1 : 0;
    value_ = 0;
  }
  // The text ended (a match at the very end counts).
  void finish() {
    if (digits_) found_ = true;
  }

 private:
  std::size_t pos_ = 0;
  bool digits_ = false;
  bool found_ = false;
  std::int64_t value_ = 0;
};

// A number or a numeric string as an integer (HTA's stream and correlation); else `absent`.
std::int64_t integer_arg(od::value v, std::int64_t absent) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return absent;
  if (type == od::json_type::number) {
    od::number_type kind;
    if (v.get_number_type().get(kind) != simdjson::SUCCESS) return absent;
    if (kind == od::number_type::signed_integer) {
      std::int64_t i = 0;
      return v.get_int64().get(i) == simdjson::SUCCESS ? i : absent;
    }
    if (kind == od::number_type::unsigned_integer) {
      std::uint64_t u = 0;
      return v.get_uint64().get(u) == simdjson::SUCCESS ? static_cast<std::int64_t>(u) : absent;
    }
    double d = 0;
    if (v.get_double().get(d) != simdjson::SUCCESS) return absent;
    // Past 64 bits (or not finite) a float names no integer (the cast would be undefined).
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return absent;
    return static_cast<std::int64_t>(d);
  }
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return absent;
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty() ? out : absent;
  }
  return absent;
}

struct Event {
  bool has_ts = false, ts_float = false, has_dur = false, has_cat = false;
  double ts = 0, dur = 0;
  std::string_view name, cat;
  std::int64_t stream = -1, correlation = -1, tid = 0;
  RowExtra extra;  // read only for ReadOptions::every_row
};

// A number's value, correctly rounded; `is_float` for a JSON number with a fraction or exponent.
// False: not a number. (get_double, not number::as_double: simdjson 3.0's number reads a float
// of 19 and more digits, a Kineto ts in ns precision, as 0.)
bool read_number(od::value v, double& out, bool& is_float) {
  od::number_type type;
  if (v.get_number_type().get(type) != simdjson::SUCCESS) return false;
  is_float = type == od::number_type::floating_point_number;
  if (type == od::number_type::unsigned_integer) {
    std::uint64_t u = 0;
    if (v.get_uint64().get(u) != simdjson::SUCCESS) return false;
    out = static_cast<double>(u);
    return true;
  }
  return v.get_double().get(out) == simdjson::SUCCESS;
}

std::string_view string_or_raw(od::value v) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return s;
  return v.raw_json_token();
}

// A pid or tid: its number, or a string's hash.
std::int64_t id_value(od::value v) {
  od::json_type type;
  if (v.type().get(type) == simdjson::SUCCESS && type == od::json_type::number) {
    return integer_arg(v, 0);
  }
  return static_cast<std::int64_t>(std::hash<std::string_view>()(string_or_raw(v)));
}

void read_args(od::value v, Event& e, bool every_row) {
  od::object args;
  if (v.get_object().get(args) != simdjson::SUCCESS) return;
  for (auto field : args) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) throw TraceError("malformed args");
    if (key == "stream") {
      e.stream = integer_arg(field.value(), -1);
    } else if (key == "correlation") {
      e.correlation = integer_arg(field.value(), -1);
    } else if (every_row && key == "wait_on_stream") {
      e.extra.wait_on_stream = integer_arg(field.value(), -1);
    } else if (every_row && key == "wait_on_cuda_event_record_corr_id") {
      e.extra.wait_on_event_record = integer_arg(field.value(), -1);
    }
  }
}

// `sync_args`: read the args the replay reads; `every_row`: the pid too.
Event parse_event(od::object obj, bool sync_args, bool every_row) {
  Event e;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) throw TraceError("malformed key");
    od::value v = field.value();
    if (key == "ts") {
      e.has_ts = read_number(v, e.ts, e.ts_float);
    } else if (key == "dur") {
      bool ignored = false;
      e.has_dur = read_number(v, e.dur, ignored);
    } else if (key == "name") {
      e.name = string_or_raw(v);
    } else if (key == "cat") {
      e.cat = string_or_raw(v);
      e.has_cat = true;
    } else if (key == "tid") {
      e.tid = id_value(v);
    } else if (key == "args") {
      read_args(v, e, sync_args);
    } else if (every_row && key == "pid") {
      e.extra.pid = id_value(v);
    }
  }
  return e;
}

// Reads the events of one trace into `trace` as the scanner hands them over.
class EventSink {
 public:
  EventSink(KinetoTrace& trace, const ReadOptions& options)
      : trace_(trace), options_(options), table_(trace.strings), categories_(trace.categories) {
    table_.intern("");
    categories_.intern("");
  }

  void element(std::string& text, bool too_deep) {
    const std::uint64_t index = trace_.events++;
    if (index >= kMaxEvents) throw TraceError("more than 2^31 events");
    if (too_deep) {
      ++too_deep_;
      return;
    }
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    od::document doc;
    auto error =
        parser_.iterate(simdjson::padded_string_view(text.data(), text.size(), text.capacity()))
            .get(doc);
    od::object obj;
    if (!error) error = doc.get_object().get(obj);
    if (error) {
      if (error == simdjson::INCORRECT_TYPE) {
        ++not_objects_;
        return;
      }
      throw TraceError("event #" + std::to_string(index) + " is not valid JSON (" +
                       simdjson::error_message(error) + ")");
    }
    Event e;
    try {
      e = parse_event(obj, options_.every_row || options_.plain_rows, options_.every_row);
    } catch (const simdjson::simdjson_error& err) {
      throw TraceError("event #" + std::to_string(index) + " is not valid JSON (" + err.what() +
                       ")");
    } catch (const TraceError& err) {
      throw TraceError("event #" + std::to_string(index) + " is not valid JSON (" + err.what() +
                       ")");
    }
    if (!e.has_ts || e.ts_float) trace_.rounded = true;
    // HTA's rows: events with a duration and a category other than "Trace".
    if (!e.has_ts || !e.has_dur || !e.has_cat || e.cat == "Trace") return;
    const bool device =
        (e.stream >= 0 && e.correlation >= 0) || e.name == "Event Sync" || e.name == "Context Sync";
    const bool keep = device || e.correlation != -1 || e.stream != -1 || index == 0 ||
                      starts_with(e.name, "ProfilerStep") || starts_with(e.cat, "ProfilerStep") ||
                      e.cat == "user_annotation";
    if (!keep && !options_.every_row) {
      trace_.plain_host.add(e.ts);
      if (options_.plain_rows) keep_plain(e, index);
      return;
    }
    Row r;
    r.ts = e.ts;
    r.dur = e.dur;
    r.stream = stream_code(e.stream);
    r.correlation = e.correlation;
    r.index = static_cast<std::uint32_t>(index);
    r.name = table_.intern(e.name);
    r.cat = category_id(e.cat);
    r.tid = static_cast<std::int32_t>(e.tid ^ (e.tid >> 32));  // a thread's key, not its number
    r.device = device;
    r.plain = !keep;
    if (!device && is_step_string(e.name)) {
      trace_.plain_host.latest_step = std::max(trace_.plain_host.latest_step, e.ts);
    }
    if ((options_.every_row || options_.plain_rows) &&
        (e.extra.wait_on_stream != -1 || e.extra.wait_on_event_record != -1)) {
      trace_.sync_args.push_back({static_cast<std::uint32_t>(trace_.rows.size()),
                                  e.extra.wait_on_stream, e.extra.wait_on_event_record});
    }
    trace_.rows.push_back(r);
    if (options_.every_row && options_.row_extras) {
      e.extra.tid = e.tid;
      trace_.extras.push_back(e.extra);
    }
  }

  void finish() {
    if (too_deep_ > 0) {
      trace_.warnings.push_back(std::to_string(too_deep_) + " events nested deeper than " +
                                std::to_string(kMaxEventDepth) + " levels skipped");
    }
    if (not_objects_ > 0) {
      trace_.warnings.push_back(std::to_string(not_objects_) +
                                " elements of traceEvents that are not objects skipped");
    }
  }

 private:
  // A host row no analysis reads, for the replay: rounded as it is read once the file is known to
  // need it (round_times() rounds the ones before).
  void keep_plain(const Event& e, std::uint64_t index) {
    PlainRows& plain = trace_.plain_rows;
    const auto name = table_.intern(e.name);
    const auto tid = static_cast<std::int32_t>(e.tid ^ (e.tid >> 32));
    if (!trace_.rounded) {
      plain.push(e.ts, e.dur, static_cast<std::uint32_t>(index), name, tid);
      plain.unrounded = plain.size();
      return;
    }
    const double end = std::floor(e.ts + e.dur);
    const double ts = std::ceil(e.ts);
    plain.push(ts, end - ts, static_cast<std::uint32_t>(index), name, tid);
  }

  // A stream in 32 bits: the value itself, or a code for one beyond them (kept in big_streams).
  std::int32_t stream_code(std::int64_t stream) {
    if (stream > KinetoTrace::kBigStream && stream <= 2147483647) {
      return static_cast<std::int32_t>(stream);
    }
    auto& big = trace_.big_streams;
    auto it = std::find(big.begin(), big.end(), stream);
    if (it == big.end()) {
      if (big.size() >= (std::size_t{1} << 30)) throw TraceError("too many distinct streams");
      it = big.insert(big.end(), stream);
    }
    return KinetoTrace::kFirstBig + static_cast<std::int32_t>(it - big.begin());
  }

  // Categories are few; past 65535 of them, the rest share the last id ("...", no rule's).
  std::uint16_t category_id(std::string_view cat) {
    constexpr std::uint32_t kLast = 65535;
    if (trace_.categories.size() < kLast)
      return static_cast<std::uint16_t>(categories_.intern(cat));
    if (auto id = categories_.find(cat)) return static_cast<std::uint16_t>(*id);
    if (trace_.categories.size() == kLast) categories_.intern("...");
    return static_cast<std::uint16_t>(kLast);
  }

  KinetoTrace& trace_;
  const ReadOptions& options_;
  StringTable table_;
  StringTable categories_;
  od::parser parser_;
  std::uint64_t too_deep_ = 0;
  std::uint64_t not_objects_ = 0;
};

// Finds `traceEvents` in the root object and cuts its array into elements. Knows strings (with
// their escapes) and brackets, nothing else: the rest of the file is not validated.
class Scanner {
 public:
  explicit Scanner(EventSink& sink) : sink_(sink) {}

  void feed(const char* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const char c = data[i];
      rank_.feed(c);
      if (collecting_) {
        if (!too_deep_) element_.push_back(c);
        step_element(c);
      } else {
        step_outside(c);
        if (in_ranges_) take_ranges(c);
      }
    }
  }

  // The text ended: was it whole?
  void finish(std::uint64_t bytes) {
    rank_.finish();
    if (!seen_root_) throw TraceError("empty file, not a trace");
    if (!found_events_) throw TraceError("no \"traceEvents\" array: not a Kineto trace");
    if (collecting_ || in_events_ || depth_ != 0 || in_string_) {
      throw TraceError("truncated: the text ends inside " +
                       std::string(in_events_ || collecting_ ? "traceEvents" : "the trace") +
                       " after " + std::to_string(bytes) + " bytes");
    }
  }

  const RankMatcher& rank() const { return rank_; }

 private:
  // Inside an element: track strings and depth until it closes.
  void step_element(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
        if (element_depth_ == 0) end_element();  // a string element
      }
      return;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        return;
      case '{':
      case '[':
        if (++element_depth_ > kMaxEventDepth && !too_deep_) {
          too_deep_ = true;
          element_.clear();
          element_.shrink_to_fit();
        }
        return;
      case '}':
      case ']':
        if (element_depth_ == 0) {  // closes the array after a scalar element
          element_.pop_back();
          end_element();
          in_events_ = false;
          --depth_;
          return;
        }
        if (--element_depth_ == 0) end_element();
        return;
      case ',':
        if (element_depth_ == 0) {  // after a scalar element
          element_.pop_back();
          end_element();
        }
        return;
      default:
        return;
    }
  }

  void end_element() {
    collecting_ = false;
    sink_.element(element_, too_deep_);
    element_.clear();
    too_deep_ = false;
    element_depth_ = 0;
  }

  // Outside the events: the root object, its keys, the events array's separators.
  void step_outside(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
        if (depth_ == 1 && key_.size() < kMaxTopLevelString) key_.push_back(c);
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
        if (depth_ == 1) end_top_level_string();
      } else if (depth_ == 1 && key_.size() < kMaxTopLevelString) {
        key_.push_back(c);
      }
      return;
    }
    if (is_space(c)) return;
    if (!seen_root_) {
      if (c != '{') throw TraceError("not a JSON object: a Kineto trace is one");
      seen_root_ = true;
      depth_ = 1;
      return;
    }
    if (in_events_) {
      if (c == ',') return;
      if (c == ']') {
        in_events_ = false;
        --depth_;
        return;
      }
      collecting_ = true;
      element_.push_back(c);
      if (c == '{' || c == '[') {
        element_depth_ = 1;
      } else if (c == '"') {
        in_string_ = true;
      }
      return;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1) {
          key_.clear();
          key_is_events_ = false;
        }
        return;
      case '[':
        if (depth_ == 1 && key_is_events_ && after_colon_) {
          in_events_ = true;
          found_events_ = true;
        } else if (depth_ == 1 && after_colon_ && last_key_ == "vxperf_ranges") {
          in_ranges_ = true;
          ranges_too_long_ = false;
          ranges_.clear();
        }
        ++depth_;
        after_colon_ = false;
        return;
      case '{':
        ++depth_;
        after_colon_ = false;
        return;
      case '}':
      case ']':
        --depth_;
        return;
      case ':':
        after_colon_ = depth_ == 1;
        return;
      default:
        after_colon_ = false;
        return;
    }
  }

  // The text of vxperf's "vxperf_ranges" list, a character at a time until it closes; then its
  // names. At most kMaxRanges bytes of it are read.
  void take_ranges(char c) {
    if (ranges_.size() < kMaxRanges) {
      ranges_.push_back(c);
    } else {
      ranges_too_long_ = true;
    }
    if (depth_ != 1) return;
    in_ranges_ = false;
    if (ranges_too_long_) {
      ranges_problem_ = "its \"vxperf_ranges\" list is longer than " + std::to_string(kMaxRanges) +
                        " bytes: ignored";
      return;
    }
    declared_.clear();
    ranges_.reserve(ranges_.size() + simdjson::SIMDJSON_PADDING);
    od::parser parser;
    od::document doc;
    od::array names;
    bool ok = parser.iterate(simdjson::padded_string_view(ranges_.data(), ranges_.size(),
                                                          ranges_.capacity()))
                      .get(doc) == simdjson::SUCCESS &&
              doc.get_array().get(names) == simdjson::SUCCESS;
    if (ok) {
      for (auto element : names) {
        std::string_view name;
        if (element.get_string().get(name) != simdjson::SUCCESS) {
          ok = false;
          break;
        }
        declared_.emplace_back(name);
      }
    }
    if (!ok) {
      declared_.clear();
      ranges_problem_ = "its \"vxperf_ranges\" is not a list of names: ignored";
    }
  }

  // A string of the root object: a key, or the value of the key before it. The records file
  // vxperf names is the one value kept (its escapes kept as the character they escape).
  void end_top_level_string() {
    if (after_colon_) {
      if (last_key_ == "vxperf_records") records_file_ = key_;
      key_is_events_ = false;
    } else {
      last_key_ = key_;
      key_is_events_ = key_ == "traceEvents";
    }
  }

 public:
  const std::string& records_file() const { return records_file_; }
  const std::vector<std::string>& declared_stages() const { return declared_; }
  const std::string& ranges_problem() const { return ranges_problem_; }

 private:
  static constexpr std::size_t kMaxTopLevelString = 4096;
  static constexpr std::size_t kMaxRanges = 1 << 20;
  EventSink& sink_;
  RankMatcher rank_;
  std::string last_key_, records_file_;
  std::string element_;
  std::string key_;
  std::int64_t depth_ = 0;
  int element_depth_ = 0;
  bool seen_root_ = false, in_string_ = false, escaped_ = false;
  bool key_is_events_ = false, after_colon_ = false;
  bool in_events_ = false, found_events_ = false;
  bool collecting_ = false, too_deep_ = false;
  std::string ranges_, ranges_problem_;
  std::vector<std::string> declared_;
  bool in_ranges_ = false, ranges_too_long_ = false;
};

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};

// HTA's launch link (index_correlation): each row with a correlation points at the last row of
// the other side with the same one, or at min(correlation, 0). The rows are taken by correlation
// through a list of their positions (4 bytes a row), sorted stably: file order within one.
void link_launches(KinetoTrace& t) {
  std::vector<std::uint32_t> by_correlation;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    if (t.rows[i].correlation != -1) by_correlation.push_back(static_cast<std::uint32_t>(i));
  }
  std::stable_sort(by_correlation.begin(), by_correlation.end(),
                   [&](std::uint32_t a, std::uint32_t b) {
                     return t.rows[a].correlation < t.rows[b].correlation;
                   });
  for (std::size_t lo = 0; lo < by_correlation.size();) {
    const std::int64_t c = t.rows[by_correlation[lo]].correlation;
    std::size_t hi = lo;
    std::int64_t last_host = -1, last_device = -1;
    for (; hi < by_correlation.size() && t.rows[by_correlation[hi]].correlation == c; ++hi) {
      const Row& r = t.rows[by_correlation[hi]];
      (r.device ? last_device : last_host) = r.index;  // file order: the last one wins
    }
    for (std::size_t k = lo; k < hi; ++k) {
      Row& r = t.rows[by_correlation[k]];
      const std::int64_t p = r.device ? last_host : last_device;
      r.partner = static_cast<std::int32_t>(
          p >= 0 ? p : std::max<std::int64_t>(std::min<std::int64_t>(c, 0), -2));
    }
    lo = hi;
  }
}

// A name as an example in one line: at most 80 bytes of it, no line breaks.
std::string example_name(std::string_view name) {
  std::string out(name.substr(0, 80));
  for (char& c : out) c = c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
  return name.size() > 80 ? out + "..." : out;
}

// Microseconds to the nanosecond, without trailing zeros.
std::string number_text(double v) {
  std::string s = internal::strprintf("%.3f", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// HTA's nanosecond rounding, applied to every row when the file has a fractional or missing ts.
// The rows it leaves with a negative duration (or that have one in the file) are said: how many,
// how many of them ran on the device, and the first in file order.
void round_times(KinetoTrace& t) {
  std::uint64_t negative = 0, device = 0;
  std::string example;
  for (Row& r : t.rows) {
    const double ts = r.ts, dur = r.dur;
    if (t.rounded) {
      const double end = std::floor(r.ts + r.dur);
      r.ts = std::ceil(r.ts);
      r.dur = end - r.ts;
    }
    if (!(r.dur < 0) || r.plain) continue;  // the path's own rows: no analysis reads them
    ++negative;
    device += r.device ? 1 : 0;
    if (example.empty()) {
      example = "\"" + example_name(t.str(r.name)) + "\" at ts " + number_text(ts) + ", dur " +
                number_text(dur) + (t.rounded ? " -> " + number_text(r.dur) : std::string());
    }
  }
  if (negative > 0) {
    t.warnings.push_back(
        std::to_string(negative) + " rows (" + std::to_string(device) +
        " on the device) have a negative duration" +
        (t.rounded ? " after HTA's rounding to whole us" : std::string(" in the file")) +
        ", e.g. " + example +
        " us; HTA's numbers keep them as HTA does, the waterfall takes them as 0 us");
  }
  if (!t.rounded) return;
  PlainRows& apart = t.plain_rows;
  for (std::size_t i = 0; i < apart.unrounded; ++i) {
    const double ts = apart.ts(i), dur = apart.dur(i);
    const double end = std::floor(ts + dur);
    const double rounded = std::ceil(ts);
    apart.set_times(i, rounded, end - rounded);
  }
  KinetoTrace::PlainHostRows& plain = t.plain_host;
  plain.first_ts = std::ceil(plain.first_ts);
  for (double& ts : plain.later) ts = std::ceil(ts);
}

}  // namespace

const Row* KinetoTrace::row_at(std::int64_t index) const {
  const std::int64_t at = position_of(index);
  return at >= 0 ? &rows[static_cast<std::size_t>(at)] : nullptr;
}

std::int64_t KinetoTrace::position_of(std::int64_t index) const {
  if (index < 0) return -1;
  auto it = std::lower_bound(rows.begin(), rows.end(), index,
                             [](const Row& r, std::int64_t i) { return r.index < i; });
  return it != rows.end() && it->index == index ? it - rows.begin() : -1;
}

const SyncArgs* KinetoTrace::sync_args_of(std::uint32_t position) const {
  auto it = std::lower_bound(
      sync_args.begin(), sync_args.end(), position,
      [](const SyncArgs& a, std::uint32_t p) { return a.position < p; });
  return it != sync_args.end() && it->position == position ? &*it : nullptr;
}

std::int32_t PlainRows::pack(double v, double base) {
  const double d = v - base;
  if (!(d > -2147483648.0 && d <= 2147483647.0)) return kEscaped;  // NaN too
  const auto q = static_cast<std::int32_t>(d);
  const double back = base + q;
  return std::memcmp(&back, &v, sizeof v) == 0 ? q : kEscaped;
}

double PlainRows::escaped(const std::unordered_map<std::uint32_t, double>& table, std::size_t i) {
  return table.at(static_cast<std::uint32_t>(i));
}

void PlainRows::store(std::size_t i, Packed& p, double ts, double dur) {
  const auto at = static_cast<std::uint32_t>(i);
  p.ts = pack(ts, base_);
  p.dur = pack(dur, 0);
  if (p.ts == kEscaped) {
    ts_escaped_[at] = ts;
  } else {
    ts_escaped_.erase(at);
  }
  if (p.dur == kEscaped) {
    dur_escaped_[at] = dur;
  } else {
    dur_escaped_.erase(at);
  }
}

void PlainRows::push(double ts, double dur, std::uint32_t index, std::uint32_t name,
                     std::int32_t tid) {
  if (size_ == 0 && std::isfinite(ts) && std::abs(ts) < 1e18) base_ = std::floor(ts);
  if ((size_ >> kBlockBits) == blocks_.size()) {
    blocks_.emplace_back(new Packed[std::size_t{1} << kBlockBits]);
  }
  Packed& p = blocks_[size_ >> kBlockBits][size_ & ((std::size_t{1} << kBlockBits) - 1)];
  p.index = index;
  std::uint32_t place = kOther;
  if (last_place_ != kOther && threads_[last_place_] == tid) {  // rows of a thread come in runs
    place = last_place_;
  } else if (auto it = thread_place_.find(tid); it != thread_place_.end()) {
    place = it->second;
  } else if (threads_.size() < kOther) {
    place = static_cast<std::uint32_t>(threads_.size());
    threads_.push_back(tid);
    thread_place_.emplace(tid, place);
  }
  last_place_ = place;
  if (place == kOther || name >= (std::uint32_t{1} << 24)) {
    p.name_thread = kOther;
    other_[static_cast<std::uint32_t>(size_)] = {name, tid};
  } else {
    p.name_thread = name << 8 | place;
  }
  store(size_, p, ts, dur);
  ++size_;
}

void PlainRows::set_times(std::size_t i, double ts, double dur) {
  store(i, blocks_[i >> kBlockBits][i & ((std::size_t{1} << kBlockBits) - 1)], ts, dur);
}

void KinetoTrace::PlainHostRows::add(double ts) {
  first_ts = count == 0 ? ts : std::min(first_ts, ts);
  ++count;
  // The last step starts at or after `latest_step`, rounded or not (ceil keeps the order, and
  // the strict one where the ceilings differ).
  if (surely_before(ts)) {
    ++before_a_step;
    return;
  }
  // A step read since may have put earlier starts surely before: they leave the list when it
  // would grow (each start is looked at O(1) times over all).
  if (later.size() == later.capacity() && later.size() >= 1024) {
    const std::size_t kept = static_cast<std::size_t>(
        std::remove_if(later.begin(), later.end(), [&](double t) { return surely_before(t); }) -
        later.begin());
    before_a_step += later.size() - kept;
    later.resize(kept);
  }
  later.push_back(ts);
}

bool KinetoTrace::PlainHostRows::surely_before(double ts) const {
  return ts < latest_step && std::ceil(ts) < std::ceil(latest_step);
}

std::uint64_t KinetoTrace::PlainHostRows::before(double last_start) const {
  std::uint64_t n = before_a_step;
  for (double ts : later) n += ts < last_start ? 1 : 0;
  return n;
}

std::uint64_t KinetoTrace::host_rows() const {
  std::uint64_t n = plain_host.count;
  for (const Row& r : rows) n += r.device ? 0 : 1;
  return n;
}

StringTable::StringTable(std::deque<std::string>& strings) : strings_(strings) {
  for (std::size_t i = 0; i < strings_.size(); ++i) {
    ids_.emplace(strings_[i], static_cast<std::uint32_t>(i));
  }
}

std::optional<std::uint32_t> StringTable::find(std::string_view s) const {
  auto it = ids_.find(s);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::uint32_t StringTable::intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(s);
  const auto id = static_cast<std::uint32_t>(strings_.size() - 1);
  ids_.emplace(strings_.back(), id);
  return id;
}

KinetoTrace read_kineto_trace(const std::string& path, const ReadOptions& options) {
  KinetoTrace trace;
  trace.file = path;
  std::unique_ptr<gzFile_s, GzClose> in(gzopen(path.c_str(), "rb"));
  if (!in) throw TraceError("cannot open");
  // Row indices and the launch link are 32-bit: 2^31 events is a trace of some 600 GB.
  gzbuffer(in.get(), 256 * 1024);
  EventSink sink(trace, options);
  Scanner scanner(sink);
  std::unique_ptr<char[]> buffer(new char[kReadBuffer]);
  std::uint64_t bytes = 0;
  for (;;) {
    const int n = gzread(in.get(), buffer.get(), static_cast<unsigned>(kReadBuffer));
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(in.get(), &code);
      throw TraceError(std::string("unreadable (") + message + ") after " + std::to_string(bytes) +
                       " bytes");
    }
    if (n == 0) break;
    scanner.feed(buffer.get(), static_cast<std::size_t>(n));
    bytes += static_cast<std::uint64_t>(n);
  }
  int code = 0;
  const char* message = gzerror(in.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    throw TraceError(std::string("compressed data ends early (") + message + ") after " +
                     std::to_string(bytes) + " bytes");
  }
  scanner.finish(bytes);
  sink.finish();
  trace.rank = scanner.rank().found() ? scanner.rank().rank() : 0;
  trace.rank_found = scanner.rank().found();
  trace.records_file = scanner.records_file();
  trace.declared_stages = scanner.declared_stages();
  if (!scanner.ranges_problem().empty()) trace.warnings.push_back(scanner.ranges_problem());
  link_launches(trace);
  round_times(trace);
  return trace;
}

}  // namespace vxperf::explain
