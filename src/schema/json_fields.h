// Typed access to the fields of one JSON object, shared by every reader of what vxperf writes:
// event scripts (replay, trace) and records files (report). A wrong field throws FieldError with a
// message naming it; the reader adds the file and line.
#pragma once

#include <cstdint>
#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace vxperf::internal {

using Json = nlohmann::ordered_json;  // keeps the writer's key order (stages, phases)

class FieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// While alive, an error inside a read of `in` (std::getline running out of memory on a huge line)
// is thrown (std::bad_alloc) instead of quietly ending the stream, so that a reader never mistakes
// it for the end of its input. The stream's own exception mask is restored.
class ThrowOnBadRead {
 public:
  explicit ThrowOnBadRead(std::istream& in) : in_(in), mask_(in.exceptions()) {
    in_.exceptions(mask_ | std::ios::badbit);
  }
  ~ThrowOnBadRead() {
    try {
      in_.exceptions(mask_);  // sets the mask, then throws if the state already matches it
    } catch (...) {
    }
  }
  ThrowOnBadRead(const ThrowOnBadRead&) = delete;
  ThrowOnBadRead& operator=(const ThrowOnBadRead&) = delete;

 private:
  std::istream& in_;
  std::ios::iostate mask_;
};

class JsonFields {
 public:
  explicit JsonFields(const Json& json) : json_(json) {}

  const Json& json() const { return json_; }
  // The field when present and not null, else nullptr.
  const Json* find(const char* field) const;
  bool has(const char* field) const { return find(field) != nullptr; }

  // A finite number; required.
  double number(const char* field) const;
  double number(const char* field, double fallback) const;
  std::optional<double> optional_number(const char* field) const;
  // An integer (an integral float too), within int64; required unless a fallback is given.
  std::int64_t integer(const char* field) const;
  std::int64_t integer(const char* field, std::int64_t fallback) const;
  // A non-negative integer (a count, a byte count).
  std::int64_t count(const char* field, std::int64_t fallback) const;
  bool boolean(const char* field, bool fallback) const;
  std::string string(const char* field, const std::string& fallback = {}) const;
  // A required object.
  const Json& object(const char* field) const;

  // A value's number, checked the same way (for values reached by iterating an object).
  static double as_number(const Json& value, const std::string& field);
  static std::int64_t as_integer(const Json& value, const std::string& field);
  [[noreturn]] static void fail(const std::string& message) { throw FieldError(message); }

 private:
  const Json& json_;
};

}  // namespace vxperf::internal
