// The rows of a field table (record_fields.h) as what they name: each row's key and the member it
// reads into, whatever the presence rules. What the records' fast path knows a group by (the keys
// it may start with) and what the test that every struct member has a row walks.
#pragma once

#include <cstddef>
#include <type_traits>

#include "schema/record_fields.h"

namespace vxperf::internal {

struct Row {
  const char* key = nullptr;     // nullptr: a group's presence, or the readings of a device row
  const void* member = nullptr;  // nullptr: a tag, a derived value, an `object` row itself
  std::size_t size = 0, align = 1;
  bool nested =
      false;  // the field of an `object` row: a member of this struct, its key one level in
};

// fn(const Row&) for each row at the level of the object walked, or fn(const Row&, const T&) with
// the member itself where fn takes it (a row without a member is fn(const Row&) still). A nested
// struct with a table of its own (an object, the stages, the readings) is one row: it is walked
// on its own.
template <class Fn>
class RowWalk {
 public:
  explicit RowWalk(Fn& fn, bool nested = false) : fn_(fn), nested_(nested) {}

  void tag(const char* key, const char*) { fn_(Row{key, nullptr, 0, 1, nested_}); }
  template <class T, class... Rest>
  void number(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void integer(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void count(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void small_int(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void bytes(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void boolean(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void flag(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void string(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void nullable(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional_count(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional_string(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional_strings(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void unless(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void density(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void dtype(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional_dtype(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void peak_source(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void nullable_object(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional_object(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void named_objects(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void named_numbers(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void named_strings(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void numbers(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void ranks(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void strings(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class T, class... Rest>
  void optional_pair(const char* key, const T& m, Rest&&...) {
    row(key, m);
  }
  template <class F>
  void object(const char* key, const char*, F&& fields) {
    fn_(Row{key, nullptr, 0, 1, nested_});
    RowWalk inner(fn_, true);
    fields(inner);
  }
  template <class B, class F>
  void group(const B& present, const char*, F&& fields) {
    row(nullptr, present);
    fields(*this);
  }
  template <class D, class R>
  void device(const char* key, const D& device, const R& readings) {
    row(key, device);
    row(nullptr, readings);
  }
  template <class T>
  void derived(const char* key, const T&) {
    fn_(Row{key, nullptr, 0, 1, nested_});
  }

 private:
  template <class T>
  void row(const char* key, const T& member) {
    if constexpr (std::is_invocable_v<Fn&, const Row&, const T&>) {
      fn_(Row{key, &member, sizeof(T), alignof(T), nested_}, member);
    } else {
      fn_(Row{key, &member, sizeof(T), alignof(T), nested_});
    }
  }

  Fn& fn_;
  bool nested_;
};

// fn(const Row&) for each row of `fields`, a group's or a table's (`fields(io)`).
template <class Fields, class Fn>
void walk_rows(Fields&& fields, Fn&& fn) {
  RowWalk<std::remove_reference_t<Fn>> walk(fn);
  fields(walk);
}

}  // namespace vxperf::internal
