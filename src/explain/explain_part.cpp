// The partial document of `vxperf explain --partial`: each struct's fields named once (fields()),
// walked to write a part as JSON and to read it back, every double exactly (the shortest form
// that reads back to the same bits; a non-finite one as a string).
#include "explain/explain_part.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "schema/json.h"

namespace vxperf::explain {
namespace {

using internal::Json;

constexpr int kPartialVersion = 2;  // 2: the replay's stacked what-ifs
constexpr const char* kCommand = "explain";

// The fields of each struct a part holds, in the order written; the schema of the document.
template <class IO>
void fields(IO& io, Temporal& t) {
  io("kernel_time_us", t.kernel_time_us);
  io("idle_time_us", t.idle_time_us);
  io("compute_time_us", t.compute_time_us);
  io("non_compute_time_us", t.non_compute_time_us);
  io("idle_pct", t.idle_pct);
  io("compute_pct", t.compute_pct);
  io("non_compute_pct", t.non_compute_pct);
}

template <class IO>
void fields(IO& io, StreamIdle& s) {
  io("stream", s.stream);
  io("host_wait_us", s.host_wait_us);
  io("kernel_wait_us", s.kernel_wait_us);
  io("other_us", s.other_us);
  io("host_wait_ratio", s.host_wait_ratio);
  io("kernel_wait_ratio", s.kernel_wait_ratio);
  io("other_ratio", s.other_ratio);
}

template <class IO>
void fields(IO& io, KernelStats& k) {
  io("name", k.name);
  io("type", k.type);
  io("count", k.count);
  io("sum_us", k.sum_us);
  io("max_us", k.max_us);
  io("min_us", k.min_us);
  io("mean_us", k.mean_us);
  io("std_us", k.std_us);
}

template <class IO>
void fields(IO& io, LaunchStats& l) {
  io("n_events", l.n_events);
  io("n_long_runtime", l.n_long_runtime);
  io("n_long_launch_delay", l.n_long_launch_delay);
  io("n_short_gpu", l.n_short_gpu);
}

template <class IO>
void fields(IO& io, WaterfallRow& w) {
  io("range", w.range);
  io("kind", w.kind);
  io("step_index", w.step_index);
  io("count", w.count);
  io("host_s", w.host_s);
  io("span_s", w.span_s);
  io("ideal_s", w.ideal_s);
  io("kernel_excess_s", w.kernel_excess_s);
  io("exposed_comm_s", w.exposed_comm_s);
  io("memory_s", w.memory_s);
  io("idle_host_wait_s", w.idle_host_wait_s);
  io("idle_kernel_wait_s", w.idle_kernel_wait_s);
  io("idle_other_s", w.idle_other_s);
  io("other_s", w.other_s);
  io("flops", w.flops);
  io("mfu", w.mfu);
}

template <class IO>
void fields(IO& io, ReplayRow& r) {
  io("range", r.range);
  io("kind", r.kind);
  io("step_index", r.step_index);
  io("count", r.count);
  io("span_s", r.span_s);
  io("replayed_s", r.replayed_s);
  io("error_pct", r.error_pct);
  io("path_s", r.path_s);
  io("what_if_s", r.what_if_s);
  io("stacked_s", r.stacked_s);
}

template <class IO>
void fields(IO& io, WhatIfResult& w) {
  io("what_if", w.what_if);
  io("applies", w.applies);
  io("why", w.why);
  io("span_s", w.span_s);
  io("predicted_s", w.predicted_s);
  io("gain_s", w.gain_s);
}

template <class IO>
void fields(IO& io, RankReplay& r) {
  io("nodes", r.nodes);
  io("edges", r.edges);
  io("ranges", r.ranges);
  io("largest_row_error_us", r.largest_row_error_us);
  io("largest_error_pct", r.largest_error_pct);
  io("largest_error_range", r.largest_error_range);
  io("rows", r.rows);
  io("what_ifs", r.what_ifs);
  io("ranked", r.ranked);
  io("stacked", r.stacked);
}

// A window's analyses: analyse_rank's part of a RankExplanation and the steps kept (a partial
// holds no critical path).
template <class IO>
void fields(IO& io, WindowedAnalysis& a) {
  io("has_device_rows", a.rank.has_device_rows);
  io("steps", a.rank.steps);
  io("temporal", a.rank.temporal);
  io("idle_by_stream", a.rank.idle_by_stream);
  io("comm_comp_overlap_pct", a.rank.comm_comp_overlap_pct);
  io("kernel_types", a.rank.kernel_types);
  io("kernels", a.rank.kernels);
  io("launches", a.rank.launches);
  io("problems", a.problems);
}

template <class IO>
void fields(IO& io, TracePart& t) {
  io("file", t.file);
  io("error", t.error);
  io("warnings", t.warnings);
  io("rank", t.rank);
  io("rank_found", t.rank_found);
  io("step_strings", t.step_strings);
  io("analysed", t.analysed);
  io("filtered", t.filtered);
  io("whole", t.whole);
  io("waterfall", t.waterfall);
  io("requests_without_record", t.requests_without_record);
  io("steps_without_record", t.steps_without_record);
  io("matched", t.matched);
  io("priced", t.priced);
  io("replay", t.replay);
  io("replay_problems", t.replay_problems);
}

// After the header (vxperf_partial, command).
template <class IO>
void fields(IO& io, ExplainParts& p) {
  io("replay", p.replay);
  io("what_ifs", p.what_ifs);
  io("records_files", p.records_files);
  io("records_problems", p.records_problems);
  io("traces", p.traces);
}

template <class T, class = void>
struct Described : std::false_type {};
struct Probe {
  template <class V>
  void operator()(const char*, V&) {}
};
template <class T>
struct Described<T, std::void_t<decltype(fields(std::declval<Probe&>(), std::declval<T&>()))>>
    : std::true_type {};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsMap : std::false_type {};
template <class V>
struct IsMap<std::map<std::string, V>> : std::true_type {};

// Writing: fields() takes what it walks by reference; the writer only reads it.
struct Writer {
  Json j = Json::object();
  template <class T>
  void operator()(const char* key, T& value) {
    j[key] = write(value);
  }

  template <class T>
  static Json write(const T& v) {
    if constexpr (Described<T>::value) {
      Writer w;
      fields(w, const_cast<T&>(v));
      return std::move(w.j);
    } else if constexpr (IsOptional<T>::value) {
      return v ? write(*v) : Json(nullptr);
    } else if constexpr (IsVector<T>::value) {
      Json a = Json::array();
      for (const auto& x : v) a.push_back(write(x));
      return a;
    } else if constexpr (IsMap<T>::value) {
      Json o = Json::object();
      for (const auto& [k, x] : v) o[k] = write(x);
      return o;
    } else if constexpr (std::is_same_v<T, double>) {
      if (std::isfinite(v)) return v;
      return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    } else {
      static_assert(std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                    std::is_integral_v<T>);
      return v;
    }
  }
};

struct Reader {
  const Json& j;
  std::string where;  // the path to `j` for an error, "traces[2].waterfall[0]"

  template <class T>
  void operator()(const char* key, T& value) {
    const std::string at = where.empty() ? std::string(key) : where + "." + key;
    auto it = j.find(key);
    if (it == j.end()) throw std::invalid_argument(at + ": missing");
    read(*it, value, at);
  }

  template <class T>
  static void read(const Json& v, T& out, const std::string& at) {
    auto wrong = [&](const char* what) { throw std::invalid_argument(at + ": must be " + what); };
    if constexpr (Described<T>::value) {
      if (!v.is_object()) wrong("an object");
      Reader r{v, at};
      fields(r, out);
    } else if constexpr (IsOptional<T>::value) {
      if (v.is_null()) {
        out.reset();
      } else {
        read(v, out.emplace(), at);
      }
    } else if constexpr (IsVector<T>::value) {
      if (!v.is_array()) wrong("an array");
      out.clear();
      out.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        read(v[i], out[i], at + "[" + std::to_string(i) + "]");
      }
    } else if constexpr (IsMap<T>::value) {
      if (!v.is_object()) wrong("an object");
      out.clear();
      for (auto it = v.begin(); it != v.end(); ++it) read(it.value(), out[it.key()], at);
    } else if constexpr (std::is_same_v<T, double>) {
      if (v.is_number()) {
        out = v.get<double>();
      } else if (v == "nan") {
        out = std::numeric_limits<double>::quiet_NaN();
      } else if (v == "inf" || v == "-inf") {
        out = (v == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity();
      } else {
        wrong("a number");
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) wrong("a string");
      out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) wrong("true or false");
      out = v.get<bool>();
    } else {
      static_assert(std::is_integral_v<T>);
      if (!v.is_number_integer()) wrong("an integer");
      if constexpr (std::is_unsigned_v<T>) {
        if (v.is_number_unsigned() || v.get<std::int64_t>() >= 0) {
          out = v.get<T>();
          return;
        }
        wrong("an integer from 0");
      } else {
        out = v.get<T>();
      }
    }
  }
};

}  // namespace

std::string partial_json(const ExplainParts& parts) {
  Json j;
  j["vxperf_partial"] = kPartialVersion;
  j["command"] = kCommand;
  Json body = Writer::write(parts);
  for (auto it = body.begin(); it != body.end(); ++it) j[it.key()] = std::move(it.value());
  return j.dump() + "\n";
}

ExplainParts read_partial(const std::string& text) {
  if (text.rfind("VXPERF-PARTIAL ", 0) == 0) {  // `vxperf report`'s partials are bytes
    throw std::invalid_argument("a partial of `vxperf report`, not of `vxperf explain`");
  }
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("vxperf_partial")) {
    throw std::invalid_argument("not a vxperf partial (no \"vxperf_partial\" in a JSON object)");
  }
  const Json& version = j["vxperf_partial"];
  if (!version.is_number_integer() || version.get<std::int64_t>() != kPartialVersion) {
    throw std::invalid_argument("a partial of version " + version.dump() +
                                "; this vxperf reads version " + std::to_string(kPartialVersion));
  }
  const auto command = j.find("command");
  if (command == j.end() || !command->is_string() || *command != kCommand) {
    throw std::invalid_argument("a partial of `vxperf " +
                                (command != j.end() && command->is_string()
                                     ? command->get<std::string>()
                                     : std::string("?")) +
                                "`, not of `vxperf explain`");
  }
  ExplainParts out;
  Reader::read(j, out, "");
  return out;
}

}  // namespace vxperf::explain
