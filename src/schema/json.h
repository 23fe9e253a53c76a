// JSON as vxperf writes it (nlohmann's ordered_json keeps the field tables' order), the error every
// reader of it throws for a wrong field (FieldError: a message naming the field; the reader adds
// the file and line), and a guard for reading lines of a stream.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
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

}  // namespace vxperf::internal
