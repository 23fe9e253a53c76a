// Every member of a record struct has a row in its field table (src/schema/record_fields.h): a
// member without one compiles and is silently left out of JSON, reading back, replay, the report
// and Prometheus. A walk of each table notes the bytes of every member its rows name; what no row
// names shows as a gap in the struct wider than padding can be (padding before a member is always
// narrower than that member's alignment, padding at the end narrower than the struct's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schema/record_fields.h"

namespace vxperf::internal {
namespace {

// A field-table io that notes where each named member lies inside the value walked.
class Coverage {
 public:
  Coverage(const void* base, std::size_t size)
      : base_(static_cast<const unsigned char*>(base)), size_(size) {}

  void tag(const char*, const char*) {}
  template <class T, class... Rest>
  void number(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void integer(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void count(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void small_int(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void bytes(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void boolean(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void flag(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void string(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void nullable(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional_count(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional_string(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional_strings(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void unless(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void density(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void dtype(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional_dtype(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void peak_source(const char*, const T& m, Rest&&...) { add(m); }
  // A nested struct with a table of its own is checked on its own: here it is one member.
  template <class T, class... Rest>
  void nullable_object(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional_object(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void named_objects(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void named_numbers(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void named_strings(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void numbers(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void ranks(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void strings(const char*, const T& m, Rest&&...) { add(m); }
  template <class T, class... Rest>
  void optional_pair(const char*, const T& m, Rest&&...) { add(m); }
  template <class F>
  void object(const char*, const char*, F&& fields) {
    fields(*this);
  }
  template <class B, class F>
  void group(const B& marker, const char*, F&& fields) {
    add(marker);
    fields(*this);
  }
  template <class D, class R>
  void device(const char*, const D& device, const R& readings) {
    add(device);
    add(readings);
  }
  template <class... Rest>
  void derived(Rest&&...) {}  // written only, from other members

  // The byte ranges no row names and padding cannot explain, as "[from, to)" (empty: none).
  std::string gaps(std::size_t struct_align) const {
    auto spans = spans_;
    std::sort(spans.begin(), spans.end());
    std::string out;
    std::size_t end = 0;
    for (const Span& s : spans) {
      if (s.begin > end && s.begin - end >= s.align) out += range(end, s.begin);
      end = std::max(end, s.end);
    }
    if (size_ > end && size_ - end >= struct_align) out += range(end, size_);
    return out;
  }

 private:
  struct Span {
    std::size_t begin, end, align;
    bool operator<(const Span& o) const { return begin < o.begin; }
  };
  template <class T>
  void add(const T& member) {
    auto p = reinterpret_cast<const unsigned char*>(&member);
    if (p < base_ || p >= base_ + size_) return;  // a default or a value of another struct
    auto begin = static_cast<std::size_t>(p - base_);
    spans_.push_back({begin, begin + sizeof(T), alignof(T)});
  }
  static std::string range(std::size_t a, std::size_t b) {
    return "[" + std::to_string(a) + ", " + std::to_string(b) + ") ";
  }

  const unsigned char* base_;
  std::size_t size_;
  std::vector<Span> spans_;
};

template <class T, class... Args>
std::string uncovered(Args... args) {
  T value{};
  Coverage coverage(&value, sizeof value);
  describe(coverage, value, args...);
  return coverage.gaps(alignof(T));
}

// An element of a named_objects row (a stage): its `name` is the key its parent writes it under.
template <class T>
std::string uncovered_element() {
  T value{};
  Coverage coverage(&value, sizeof value);
  coverage.string("name", value.name);
  describe(coverage, value);
  return coverage.gaps(alignof(T));
}

TEST(FieldCoverage, EveryRecordMemberHasARow) {
  EXPECT_EQ(uncovered<RequestRecord>(), "");
  EXPECT_EQ(uncovered_element<StageSummary>(), "");
  EXPECT_EQ(uncovered<DitThroughput>(), "");
  EXPECT_EQ(uncovered<DeviceReadings>(), "");
  EXPECT_EQ(uncovered<ParallelLayout>(), "");
  EXPECT_EQ(uncovered<ParallelSpec>(), "");
  EXPECT_EQ(uncovered<TrainWindowRecord>(), "");
  EXPECT_EQ(uncovered<TrainThroughput>(), "");
  EXPECT_EQ(uncovered<CrossRankView>(), "");
  EXPECT_EQ(uncovered<AttentionWidths>(), "");
  EXPECT_EQ(uncovered<ModelInfo>(/*training=*/true), "");
}

// The check itself: a member left out of a table, wherever it sits, is found.
struct Planted {
  double first = 0;
  bool forgotten_flag = false;  // between two rows
  double second = 0;
  std::optional<std::int64_t> forgotten_count;  // at the end
};
template <class Io, class R, Same<R, Planted> = 0>
void describe(Io& io, R& r) {
  io.number("first", r.first);
  io.number("second", r.second);
}
struct Complete {
  double first = 0;
  bool flag = false;
  double second = 0;
};
template <class Io, class R, Same<R, Complete> = 0>
void describe(Io& io, R& r) {
  io.number("first", r.first);
  io.boolean("flag", r.flag);
  io.number("second", r.second);
}

TEST(FieldCoverage, AMemberWithoutARowIsFound) {
  EXPECT_EQ(uncovered<Planted>(), "[8, 16) [24, 40) ");
  EXPECT_EQ(uncovered<Complete>(), "");  // padding after the flag is not a gap
}

}  // namespace
}  // namespace vxperf::internal
