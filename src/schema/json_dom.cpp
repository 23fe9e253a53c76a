#include "schema/json_dom.h"

#include <cmath>

namespace vxperf::internal {

namespace dom = simdjson::dom;

bool FieldIndex::find_elsewhere(std::string_view key, dom::element& out) {
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

void FieldIndex::build() {
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
std::size_t FieldIndex::slot_of(std::string_view key) {
  std::size_t n = key.size();
  if (n == 0) return 0;
  auto c = [&](std::size_t i) { return static_cast<unsigned char>(key[i]); };
  std::uint32_t h = static_cast<std::uint32_t>(n);
  h = h * 31 + c(0);
  h = h * 31 + c(n / 2);
  h = h * 31 + c(n - 1);
  return (h * 0x9E3779B1u) >> (32 - kSlotBits);  // the product's top bits mix all of h
}

double DomObject::number(dom::element e, std::string_view field) {
  double d = 0;
  if (e.get_double().get(d) != simdjson::SUCCESS) {
    FieldReader<DomObject>::fail(quoted(field) + " must be a number");
  }
  if (!std::isfinite(d)) FieldReader<DomObject>::fail(quoted(field) + " must be finite");
  return d;
}

std::int64_t DomObject::integer(dom::element e, std::string_view field) {
  switch (e.type()) {
    case dom::element_type::INT64:
      return std::int64_t(e);
    case dom::element_type::UINT64:  // an int64 is read as INT64
      FieldReader<DomObject>::fail(quoted(field) + " is out of range");
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
  FieldReader<DomObject>::fail(quoted(field) + " must be an integer");
}

bool DomObject::boolean(dom::element e, std::string_view field) {
  if (!e.is_bool()) FieldReader<DomObject>::fail(quoted(field) + " must be true or false");
  return bool(e);
}

std::string DomObject::string(dom::element e, std::string_view field) {
  if (!e.is_string()) FieldReader<DomObject>::fail(quoted(field) + " must be a string");
  return std::string(std::string_view(e));
}

}  // namespace vxperf::internal
