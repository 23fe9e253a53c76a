// A RecordVisitor that builds the JSON value of what it is walked over (nlohmann's ordered_json,
// which keeps the order of the field tables).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schema/json.h"
#include "vxperf/record_walk.h"

namespace vxperf::internal {

class JsonVisitor final : public RecordVisitor {
 public:
  JsonVisitor() = default;
  // Fields walked without an object of their own are added to `object` (an event's head).
  explicit JsonVisitor(Json object) : root_(std::move(object)) { stack_.push_back(&root_); }
  JsonVisitor(const JsonVisitor&) = delete;
  JsonVisitor& operator=(const JsonVisitor&) = delete;

  // The value built; valid once the walk has closed what it opened.
  Json& json() { return root_; }

  void begin_object(std::string_view key) override { open(key, Json::object()); }
  void end_object() override { stack_.pop_back(); }
  void begin_array(std::string_view key) override { open(key, Json::array()); }
  void end_array() override { stack_.pop_back(); }
  void null(std::string_view key) override { put(key, nullptr); }
  void boolean(std::string_view key, bool value) override { put(key, value); }
  void integer(std::string_view key, std::int64_t value) override { put(key, value); }
  void unsigned_integer(std::string_view key, std::uint64_t value) override { put(key, value); }
  void number(std::string_view key, double value) override { put(key, value); }
  void string(std::string_view key, std::string_view value) override { put(key, value); }

 private:
  template <class T>
  Json& put(std::string_view key, T&& value) {
    if (stack_.empty()) {
      root_ = Json(std::forward<T>(value));
      return root_;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(Json(std::forward<T>(value)));
      return parent.back();
    }
    Json& slot = parent[std::string(key)];
    slot = Json(std::forward<T>(value));
    return slot;
  }
  void open(std::string_view key, Json value) { stack_.push_back(&put(key, std::move(value))); }

  Json root_;
  std::vector<Json*> stack_;  // the objects and arrays open, innermost last
};

}  // namespace vxperf::internal
