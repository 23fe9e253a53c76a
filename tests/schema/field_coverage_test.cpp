// Every member of a record struct has a row in its field table (src/schema/record_fields.h): a
// member without one compiles and is silently left out of JSON, reading back, replay, the report
// and Prometheus. A walk of each table's rows (src/schema/row_walk.h) notes the bytes of every
// member they name; what no row names shows as a gap in the struct wider than padding can be
// (padding before a member is always narrower than that member's alignment, padding at the end
// narrower than the struct's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schema/record_fields.h"
#include "schema/row_walk.h"

namespace vxperf::internal {
namespace {

// The byte ranges of a struct that the rows of its table name (schema/row_walk.h).
class Coverage {
 public:
  Coverage(const void* base, std::size_t size)
      : base_(static_cast<const unsigned char*>(base)), size_(size) {}

  void operator()(const Row& row) {
    auto p = static_cast<const unsigned char*>(row.member);
    if (p == nullptr || p < base_ || p >= base_ + size_) return;  // no member, or a default
    auto begin = static_cast<std::size_t>(p - base_);
    spans_.push_back({begin, begin + row.size, row.align});
  }

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
  walk_rows([&](auto& io) { describe(io, value, args...); }, coverage);
  return coverage.gaps(alignof(T));
}

// An element of a named_objects row (a stage): its `name` is the key its parent writes it under.
template <class T>
std::string uncovered_element() {
  T value{};
  Coverage coverage(&value, sizeof value);
  walk_rows(
      [&](auto& io) {
        io.string("name", value.name);
        describe(io, value);
      },
      coverage);
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
  EXPECT_EQ(uncovered_element<PhaseScores>(), "");
  EXPECT_EQ(uncovered<TrainEndRecord>(), "");
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
