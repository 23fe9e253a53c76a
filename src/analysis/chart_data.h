// What ChartData keeps of each record for the report page (vxperf/report.h).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "vxperf/report.h"

namespace vxperf::analysis {

struct ChartData::Impl {
  // Phases beyond this many names are not charted (the engine has fewer).
  static constexpr std::size_t kMaxPhases = 16;
  static constexpr float kNone = NAN;  // a number the record did not carry
  // The device readings the page charts (their rows' Show says so, vxperf/field_show.h), in the
  // field table's order: what a point's `readings` holds, by the same index. The first
  // kMaxCharted (tests/analysis fail when the table charts more).
  static constexpr std::size_t kMaxCharted = 4;
  using Readings = std::array<float, kMaxCharted>;
  static const std::vector<Show>& charted();
  static constexpr Readings unread() {
    Readings r{};
    for (float& v : r) v = kNone;
    return r;
  }

  struct Window {
    int rank = 0;
    std::int64_t step_first = 0, step_last = 0;
    float p50 = 0, p95 = 0;
    float mfu = kNone;  // a fraction
    Readings readings = unread();
    double alloc_bytes = kNone, reserved_bytes = kNone;
    std::array<float, kMaxPhases> phase_s{};  // mean seconds per step, by phase_names' index
    // Its bytes in a report partial (analysis/partial_io.h).
    template <class IO>
    void fields(IO& io) {
      io(rank, step_first, step_last, p50, p95, mfu, readings, alloc_bytes, reserved_bytes,
         phase_s);
    }
    double mid_step() const {
      return (static_cast<double>(step_first) + static_cast<double>(step_last)) / 2.0;
    }
  };
  struct Request {
    int rank = 0;
    bool warmup = false;
    std::int64_t req = 0;
    float e2e_s = 0;
    Readings readings = unread();
    double alloc_bytes = kNone, reserved_bytes = kNone;
    template <class IO>
    void fields(IO& io) {
      io(rank, warmup, req, e2e_s, readings, alloc_bytes, reserved_bytes);
    }
  };
  // One bar of the per-request chart: seconds by stage_names' index, then the untimed rest.
  struct Bar {
    int rank = 0;
    bool warmup = false;
    std::int64_t req = 0;
    std::vector<float> stage_s;
    float untimed_s = 0;
    template <class IO>
    void fields(IO& io) {
      io(rank, warmup, req, stage_s, untimed_s);
    }
  };

  std::vector<std::string> phase_names;  // in order of first use
  std::vector<Window> windows;           // in input order
  std::vector<std::string> stage_names;  // in order of first use
  std::vector<Request> requests;         // in input order
  std::deque<Bar> last_bars;             // the last svg::kMaxBars requests
  std::size_t phase_index(const std::string& name);
  std::size_t stage_index(const std::string& name);
  // Another reading's requests after these, and its last bars with their stages (`stage_names`,
  // its names) by this one's index of their names; `bars` is emptied of their seconds.
  void add_requests(const std::vector<std::string>& from_stage_names,
                    const std::vector<Request>& from_requests, std::deque<Bar>& bars);
};

}  // namespace vxperf::analysis
