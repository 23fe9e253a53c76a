#include "analysis/chart_data.h"

#include <algorithm>

#include "analysis/svg_charts.h"

namespace vxperf::analysis {

namespace {

std::size_t index_of(std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
  names.push_back(name);
  return names.size() - 1;
}

}  // namespace

std::size_t ChartData::Impl::phase_index(const std::string& name) {
  return index_of(phase_names, name);
}
std::size_t ChartData::Impl::stage_index(const std::string& name) {
  return index_of(stage_names, name);
}

ChartData::ChartData() : impl_(std::make_unique<Impl>()) {}
ChartData::~ChartData() = default;

void ChartData::request(const RequestRecord& r) {
  Impl::Request point;
  point.rank = r.rank;
  point.warmup = r.warmup;
  point.req = r.req;
  point.e2e_s = static_cast<float>(r.e2e_s);
  if (r.readings) {
    point.alloc_bytes = static_cast<double>(r.readings->allocated);
    point.reserved_bytes = static_cast<double>(r.readings->reserved);
    if (r.readings->energy_j) point.energy_j = static_cast<float>(*r.readings->energy_j);
    if (r.readings->power_w_mean) point.power_w = static_cast<float>(*r.readings->power_w_mean);
  }
  impl_->requests.push_back(point);

  Impl::Bar bar;
  bar.rank = r.rank;
  bar.warmup = r.warmup;
  bar.req = r.req;
  double timed = 0;
  for (const auto& s : r.stages) {
    std::size_t k = impl_->stage_index(s.name);
    if (bar.stage_s.size() <= k) bar.stage_s.resize(k + 1, 0.0F);
    bar.stage_s[k] = static_cast<float>(s.total_ms / 1000.0);
    timed += s.total_ms / 1000.0;
  }
  bar.untimed_s = static_cast<float>(std::max(r.e2e_s - timed, 0.0));
  impl_->last_bars.push_back(std::move(bar));
  if (impl_->last_bars.size() > svg::kMaxBars) impl_->last_bars.pop_front();
}

void ChartData::window(const TrainWindowRecord& w) {
  Impl::Window point;
  point.rank = w.rank;
  point.step_first = w.step_first;
  point.step_last = w.step_last;
  point.p50 = static_cast<float>(w.step_s_p50);
  point.p95 = static_cast<float>(w.step_s_p95);
  if (w.throughput && w.throughput->mfu) point.mfu = static_cast<float>(*w.throughput->mfu);
  if (w.readings) {
    point.alloc_bytes = static_cast<double>(w.readings->allocated);
    point.reserved_bytes = static_cast<double>(w.readings->reserved);
    if (w.readings->power_w_mean) point.power_w = static_cast<float>(*w.readings->power_w_mean);
    if (w.readings->sm_clock_mhz_min) {
      point.sm_clock_mhz = static_cast<float>(*w.readings->sm_clock_mhz_min);
    }
  }
  for (const auto& [name, s] : w.phases_s) {
    std::size_t k = impl_->phase_index(name);
    if (k < Impl::kMaxPhases) point.phase_s[k] = static_cast<float>(s);
  }
  impl_->windows.push_back(point);
}

}  // namespace vxperf::analysis
