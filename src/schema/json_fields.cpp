#include "schema/json_fields.h"

#include <cmath>

namespace vxperf::internal {
namespace {

std::string quoted(const std::string& field) { return "\"" + field + "\""; }

}  // namespace

const Json* JsonFields::find(const char* field) const {
  auto it = json_.find(field);
  return it == json_.end() || it->is_null() ? nullptr : &*it;
}

double JsonFields::as_number(const Json& value, const std::string& field) {
  if (!value.is_number()) fail(quoted(field) + " must be a number");
  double d = value.get<double>();
  if (!std::isfinite(d)) fail(quoted(field) + " must be finite");
  return d;
}

std::int64_t JsonFields::as_integer(const Json& value, const std::string& field) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX) {
      fail(quoted(field) + " is out of range");
    }
    return value.get<std::int64_t>();
  }
  if (value.is_number_float()) {
    double d = value.get<double>();
    // Range first: converting a double outside int64's range is undefined behaviour.
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      return static_cast<std::int64_t>(d);
    }
  }
  fail(quoted(field) + " must be an integer");
}

double JsonFields::number(const char* field) const {
  const Json* v = find(field);
  if (v == nullptr) fail(quoted(field) + " must be a number");
  return as_number(*v, field);
}

double JsonFields::number(const char* field, double fallback) const {
  const Json* v = find(field);
  return v != nullptr ? as_number(*v, field) : fallback;
}

std::optional<double> JsonFields::optional_number(const char* field) const {
  const Json* v = find(field);
  if (v == nullptr) return std::nullopt;
  return as_number(*v, field);
}

std::int64_t JsonFields::integer(const char* field) const {
  const Json* v = find(field);
  if (v == nullptr) fail(quoted(field) + " must be an integer");
  return as_integer(*v, field);
}

std::int64_t JsonFields::integer(const char* field, std::int64_t fallback) const {
  const Json* v = find(field);
  return v != nullptr ? as_integer(*v, field) : fallback;
}

std::int64_t JsonFields::count(const char* field, std::int64_t fallback) const {
  std::int64_t v = integer(field, fallback);
  if (v < 0) fail(quoted(field) + " must not be negative");
  return v;
}

bool JsonFields::boolean(const char* field, bool fallback) const {
  const Json* v = find(field);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) fail(quoted(field) + " must be true or false");
  return v->get<bool>();
}

std::string JsonFields::string(const char* field, const std::string& fallback) const {
  const Json* v = find(field);
  if (v == nullptr) return fallback;
  if (!v->is_string()) fail(quoted(field) + " must be a string");
  return v->get<std::string>();
}

const Json& JsonFields::object(const char* field) const {
  const Json* v = find(field);
  if (v == nullptr || !v->is_object()) fail(quoted(field) + " must be an object");
  return *v;
}

}  // namespace vxperf::internal
