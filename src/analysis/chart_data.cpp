#include "analysis/chart_data.h"

#include <algorithm>

#include "analysis/svg_charts.h"
#include "schema/show_walk.h"

namespace vxperf::analysis {

namespace {

// Each charted reading of `r` into `into`, by its place among them.
void keep_readings(const DeviceReadings& r, ChartData::Impl::Readings& into) {
  std::size_t k = 0;
  internal::walk_shown(r, [&](const char*, const Show& show, const internal::ShownValue& v) {
    if (show.charts == 0) return;
    if (v.number && k < into.size()) into[k] = static_cast<float>(*v.number);
    ++k;
  });
}

std::size_t index_of(std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
  names.push_back(name);
  return names.size() - 1;
}

}  // namespace

const std::vector<Show>& ChartData::Impl::charted() {
  static const std::vector<Show> shows = [] {
    std::vector<Show> out;
    internal::walk_shown(DeviceReadings{},
                         [&](const char*, const Show& show, const internal::ShownValue&) {
                           if (show.charts != 0 && out.size() < kMaxCharted) out.push_back(show);
                         });
    return out;
  }();
  return shows;
}

std::size_t ChartData::Impl::phase_index(const std::string& name) {
  return index_of(phase_names, name);
}
std::size_t ChartData::Impl::stage_index(const std::string& name) {
  return index_of(stage_names, name);
}

void ChartData::Impl::add_requests(const std::vector<std::string>& from_stage_names,
                                   const std::vector<Request>& from_requests,
                                   std::deque<Bar>& bars) {
  requests.insert(requests.end(), from_requests.begin(), from_requests.end());
  std::vector<std::size_t> stage_at;
  for (const std::string& stage : from_stage_names) stage_at.push_back(stage_index(stage));
  for (Bar& bar : bars) {
    std::vector<float> own = std::move(bar.stage_s);
    bar.stage_s.clear();
    for (std::size_t k = 0; k < own.size(); ++k) {
      if (bar.stage_s.size() <= stage_at[k]) bar.stage_s.resize(stage_at[k] + 1, 0.0F);
      bar.stage_s[stage_at[k]] = own[k];
    }
    last_bars.push_back(std::move(bar));
    if (last_bars.size() > svg::kMaxBars) last_bars.pop_front();
  }
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
    keep_readings(*r.readings, point.readings);
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
    keep_readings(*w.readings, point.readings);
  }
  for (const auto& [name, s] : w.phases_s) {
    std::size_t k = impl_->phase_index(name);
    if (k < Impl::kMaxPhases) point.phase_s[k] = static_cast<float>(s);
  }
  impl_->windows.push_back(point);
}

bool ChartData::joinable(const ChartData& later) const {
  const Impl& from = *later.impl_;
  if (from.phase_names.size() > Impl::kMaxPhases) return false;
  if (from.last_bars.empty()) return true;
  // A bar's stages run to its last stage's index: the same bar only where each stage keeps its
  // index here (their names in the same order, the new ones after these).
  std::size_t fresh = impl_->stage_names.size();
  for (std::size_t k = 0; k < from.stage_names.size(); ++k) {
    const auto& names = impl_->stage_names;
    auto it = std::find(names.begin(), names.end(), from.stage_names[k]);
    std::size_t at = it != names.end() ? static_cast<std::size_t>(it - names.begin()) : fresh++;
    if (at != k) return false;
  }
  return true;
}

void ChartData::join(ChartData& later) {
  Impl& from = *later.impl_;
  Impl& c = *impl_;
  // Phases and stages by this one's index of their names, as one reading names them in order.
  std::vector<std::size_t> phase_at;
  for (const std::string& phase : from.phase_names) phase_at.push_back(c.phase_index(phase));
  c.windows.reserve(c.windows.size() + from.windows.size());
  for (const Impl::Window& w : from.windows) {
    Impl::Window point = w;
    point.phase_s = {};
    for (std::size_t k = 0; k < phase_at.size() && k < Impl::kMaxPhases; ++k) {
      if (phase_at[k] < Impl::kMaxPhases) point.phase_s[phase_at[k]] = w.phase_s[k];
    }
    c.windows.push_back(point);
  }
  c.add_requests(from.stage_names, from.requests, from.last_bars);
  later.impl_ = std::make_unique<Impl>();
}

}  // namespace vxperf::analysis
