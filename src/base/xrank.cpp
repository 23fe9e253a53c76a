// The straggler rule and the rank exchange's wire form (vxperf/xrank.h).
#include "vxperf/xrank.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/stats.h"

namespace vxperf {
namespace {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return internal::percentile(values, 50);
}

// "xrank" and a layout number, which the phase table's length is part of (1 for the first
// eleven phases): a packed window of another layout, a build with other phases, is refused
// rather than misread.
constexpr double kLayoutTag = static_cast<double>(0x7872616e6b00LL + (kPhaseCount - 10));
constexpr std::size_t kPhaseBase = 7;
constexpr std::size_t kPhaseSlots = kPhaseCount;
static_assert(kPhaseBase + kPhaseSlots + 3 == kRankWindowDoubles, "RankWindow layout");

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

bool whole_in(double v, double low, double high) {
  return std::isfinite(v) && v == std::floor(v) && v >= low && v <= high;
}

}  // namespace

StragglerVerdict find_stragglers(const std::vector<RankTimes>& ranks) {
  StragglerVerdict verdict;
  if (ranks.size() < 2) return verdict;
  std::vector<double> steps;
  for (const auto& r : ranks) steps.push_back(r.step_s);
  verdict.median_s = median_of(steps);

  // Columns: every phase any rank names (a phase a rank lacks is zero there), or the step itself.
  std::vector<std::string> names;
  for (const auto& r : ranks) {
    for (const auto& [name, seconds] : r.phases_s) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  bool by_phase = !names.empty();
  if (!by_phase) names.push_back("step");
  std::vector<std::vector<double>> table(ranks.size(), std::vector<double>(names.size(), 0.0));
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (!by_phase) {
      table[i][0] = ranks[i].step_s;
      continue;
    }
    for (const auto& [name, seconds] : ranks[i].phases_s) {
      auto k =
          static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
      table[i][k] += seconds;
    }
  }
  std::vector<double> medians(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    std::vector<double> column;
    for (const auto& row : table) column.push_back(row[k]);
    medians[k] = median_of(std::move(column));
  }

  std::vector<std::size_t> largest(ranks.size(), 0);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    double excess = 0;
    double most = 0;
    for (std::size_t k = 0; k < names.size(); ++k) {
      double above = table[i][k] - medians[k];
      if (above <= 0) continue;
      excess += above;
      if (above > most) {
        most = above;
        largest[i] = k;
      }
    }
    verdict.excess_s.push_back(excess);
  }
  // Measured from the least-excess rank: in a synchronized pair, the waiting rank's wait is above
  // the median exactly as much as the slow rank's work is, and neither is named.
  double floor = *std::min_element(verdict.excess_s.begin(), verdict.excess_s.end());
  double threshold = kStragglerMargin * verdict.median_s;
  std::vector<std::pair<int, std::string>> named;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (verdict.excess_s[i] - floor > threshold)
      named.emplace_back(ranks[i].rank, names[largest[i]]);
  }
  std::sort(named.begin(), named.end());
  for (auto& [rank, where] : named) {
    verdict.stragglers.push_back(rank);
    verdict.where.push_back(std::move(where));
  }
  return verdict;
}

std::vector<double> relative_scores(const std::vector<double>& times) {
  double fastest = 0;
  for (double t : times) {
    if (t > 0 && (fastest <= 0 || t < fastest)) fastest = t;
  }
  std::vector<double> scores;
  scores.reserve(times.size());
  for (double t : times) scores.push_back(t > 0 ? fastest / t : 1.0);
  return scores;
}

double individual_score(double best, double latest) {
  return latest > 0 && best > 0 ? std::min(best, latest) / latest : 1.0;
}

void pack_rank_window(const RankWindow& w, double* out) {
  out[0] = kLayoutTag;
  out[1] = w.rank;
  out[2] = w.world_size;
  out[3] = static_cast<double>(w.step_first);
  out[4] = static_cast<double>(w.step_last);
  out[5] = w.step_s_p50;
  out[6] = w.step_s_p95;
  for (std::size_t k = 0; k < kPhaseSlots; ++k) out[kPhaseBase + k] = w.phase_s[k];
  out[kPhaseBase + kPhaseSlots] = w.samples_per_s.value_or(kNone);
  out[kPhaseBase + kPhaseSlots + 1] = w.tflops.value_or(kNone);
  out[kPhaseBase + kPhaseSlots + 2] =
      w.peak_alloc_bytes ? static_cast<double>(*w.peak_alloc_bytes) : kNone;
}

std::optional<RankWindow> unpack_rank_window(const double* in) {
  constexpr double kMaxInt = 9007199254740992.0;  // 2^53: every integer below is exact
  if (in[0] != kLayoutTag || !whole_in(in[2], 1, 1 << 30) || !whole_in(in[1], 0, in[2] - 1) ||
      !whole_in(in[3], 0, kMaxInt) || !whole_in(in[4], in[3], kMaxInt)) {
    return std::nullopt;
  }
  RankWindow w;
  w.rank = static_cast<int>(in[1]);
  w.world_size = static_cast<int>(in[2]);
  w.step_first = static_cast<std::int64_t>(in[3]);
  w.step_last = static_cast<std::int64_t>(in[4]);
  w.step_s_p50 = in[5];
  w.step_s_p95 = in[6];
  for (std::size_t k = 0; k < kPhaseSlots; ++k) w.phase_s[k] = in[kPhaseBase + k];
  for (std::size_t k = 5; k < kPhaseBase + kPhaseSlots; ++k) {
    if (!std::isfinite(in[k]) || in[k] < 0) return std::nullopt;
  }
  double samples = in[kPhaseBase + kPhaseSlots];
  double tflops = in[kPhaseBase + kPhaseSlots + 1];
  double peak = in[kPhaseBase + kPhaseSlots + 2];
  if (std::isfinite(samples)) w.samples_per_s = samples;
  if (std::isfinite(tflops)) w.tflops = tflops;
  if (whole_in(peak, 0, kMaxInt)) w.peak_alloc_bytes = static_cast<std::uint64_t>(peak);
  return w;
}

}  // namespace vxperf
