#include "schema/record_reader.h"

#include <exception>

namespace vxperf::internal {

void Reader::small_int(const char* key, int& value, int fallback) {
  std::int64_t v = f_.integer(key, fallback);
  if (v < 0 || v > 1000000) fail(quoted(key) + " is out of range");
  value = static_cast<int>(v);
}

void Reader::density(const char* key, double& value) {
  if (!f_.has(key)) return;
  value = f_.number(key);
  if (!valid_density(value)) fail(quoted(key) + " must be in (0, 1]");
}

void Reader::dtype(const char* key, Dtype& value) {
  std::optional<Dtype> read;
  optional_dtype(key, read);
  if (read) value = *read;
}

void Reader::optional_dtype(const char* key, std::optional<Dtype>& value) {
  if (!f_.has(key)) return;
  auto dtype = parse_dtype(f_.string(key));
  if (!dtype) fail(quoted(key) + " is not a known dtype");
  value = dtype;
}

void Reader::peak_source(const char* key, PeakSource& value, bool) {
  std::string source = f_.string(key, "table");
  if (source == "env") {
    value = PeakSource::kEnv;
  } else if (source == "measured") {
    value = PeakSource::kMeasured;
  } else if (source != "table") {
    fail(quoted(key) + " must be table, env or measured");
  }
}

void Reader::named_numbers(const char* key, std::vector<std::pair<std::string, double>>& values) {
  const Json& o = f_.object(key);
  for (auto it = o.begin(); it != o.end(); ++it) {
    values.emplace_back(it.key(), JsonFields::as_number(it.value(), it.key()));
  }
}

void Reader::named_strings(const char* key,
                           std::vector<std::pair<std::string, std::string>>& values) {
  const Json* o = f_.find(key);
  if (o == nullptr) return;
  if (!o->is_object()) fail(quoted(key) + " must be an object");
  for (auto it = o->begin(); it != o->end(); ++it) {
    if (!it.value().is_string()) fail(quoted(key) + " must hold strings");
    values.emplace_back(it.key(), it.value().get<std::string>());
  }
}

namespace {

const Json* array_of(const JsonFields& f, const char* key, const char* name) {
  const Json* a = f.find(key);
  if (a != nullptr && !a->is_array()) JsonFields::fail("\"" + std::string(name) + "\" must be an array");
  return a;
}

}  // namespace

void Reader::numbers(const char* key, std::vector<double>& values, const char* array,
                     const char* element) {
  if (const Json* a = array_of(f_, key, array)) {
    for (const auto& n : *a) values.push_back(JsonFields::as_number(n, element));
  }
}

void Reader::ranks(const char* key, std::vector<int>& values, const char* name) {
  if (const Json* a = array_of(f_, key, name)) {
    for (const auto& n : *a) {
      std::int64_t rank = JsonFields::as_integer(n, name);
      if (rank < 0 || rank > 1000000) fail(quoted(name) + " holds a rank out of range");
      values.push_back(static_cast<int>(rank));
    }
  }
}

void Reader::strings(const char* key, std::vector<std::string>& values, const char* name) {
  if (const Json* a = array_of(f_, key, name)) {
    for (const auto& n : *a) {
      if (!n.is_string()) fail(quoted(name) + " must hold strings");
      values.push_back(n.get<std::string>());
    }
  }
}

void Reader::device(const char* key, std::optional<int>& device,
                    std::optional<DeviceReadings>& readings) {
  std::string d = f_.string(key);
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
  describe(*this, read);
  readings = read;
}

RequestRecord read_request(const Json& json) {
  RequestRecord r;
  Reader reader(json);
  describe(reader, r);
  return r;
}

TrainWindowRecord read_window(const Json& json) {
  TrainWindowRecord r;
  Reader reader(json);
  describe(reader, r);
  return r;
}

}  // namespace vxperf::internal
