// The partial document of `vxperf explain --partial`: each struct's fields named once (fields()),
// walked to write a part as JSON and to read it back, every double exactly (the shortest form
// that reads back to the same bits; a non-finite one as a string).
#include "explain/explain_part.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "analysis/partial_io.h"
#include "explain/explain_fields.h"
#include "schema/json.h"

namespace vxperf::explain {
namespace {

using analysis::partial_io::Container;
using analysis::partial_io::HasFree;
using analysis::partial_io::IsMap;
using analysis::partial_io::IsOptional;
using internal::Json;

constexpr int kPartialVersion = 2;  // 2: the replay's stacked what-ifs
constexpr const char* kCommand = "explain";

// Writing: fields() takes what it walks by reference; the writer only reads it.
struct Writer {
  Json j = Json::object();
  template <class T>
  void operator()(const char* key, T& value) {
    j[key] = write(value);
  }

  template <class T>
  static Json write(const T& v) {
    if constexpr (HasFree<T>::value) {
      Writer w;
      fields(w, const_cast<T&>(v));
      return std::move(w.j);
    } else if constexpr (IsOptional<T>::value) {
      return v ? write(*v) : Json(nullptr);
    } else if constexpr (Container<T>::value) {
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
    if constexpr (HasFree<T>::value) {
      if (!v.is_object()) wrong("an object");
      Reader r{v, at};
      fields(r, out);
    } else if constexpr (IsOptional<T>::value) {
      if (v.is_null()) {
        out.reset();
      } else {
        read(v, out.emplace(), at);
      }
    } else if constexpr (Container<T>::value) {
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
