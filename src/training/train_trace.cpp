#include "training/train_trace.h"

#include "script/trace_events.h"
#include "script/trace_writer.h"

namespace vxperf::detail {

std::int64_t TrainTrace::push(Json event, std::int64_t step) {
  Entry entry;
  entry.event = std::move(event);
  entry.step = step;
  entries_.push_back(std::move(entry));
  return first_ + static_cast<std::int64_t>(entries_.size()) - 1;
}

std::int64_t TrainTrace::add_pair(Phase phase, const Marker& start, const Marker& end,
                                  std::int64_t step, std::int64_t tokens, std::int64_t samples,
                                  const void* optimizer, bool synced, double fraction) {
  Json ev;
  if (phase == Phase::kClip) {
    ev["ev"] = "clip";
  } else if (phase == Phase::kOptimizer) {
    ev["ev"] = "optimizer_step";
  } else {
    ev["ev"] = "phase";
    ev["name"] = phase_name(phase);
  }
  ev["t0"] = start.host_s;
  ev["t1"] = end.host_s;
  ev["device_ms"] = nullptr;
  ev["ready_after"] = 0;
  if (phase == Phase::kForward && tokens > 0) {
    ev["tokens"] = tokens;
    ev["samples"] = samples;
  }
  if (fraction != 1.0) ev["frac"] = fraction;
  if (phase == Phase::kOptimizer) {
    auto it = owners_.find(optimizer);
    if (it == owners_.end()) {
      it = owners_.emplace(optimizer, "optimizer" + std::to_string(owners_.size())).first;
    }
    ev["owner"] = it->second;
    ev["sync"] = synced;
  }
  return push(std::move(ev), step);
}

void TrainTrace::set_device_time(std::int64_t entry, double device_ms, std::int64_t ready_after) {
  if (!holds(entry)) return;
  Json& ev = at(entry).event;
  ev["device_ms"] = device_ms;
  ev["ready_after"] = ready_after;
}

void TrainTrace::set_fraction(std::int64_t entry, double fraction) {
  if (!holds(entry)) return;
  Json& ev = at(entry).event;
  if (fraction == 1.0) {
    ev.erase("frac");
  } else {
    ev["frac"] = fraction;
  }
}

void TrainTrace::set_dtype(std::int64_t entry, Dtype dtype) {
  if (holds(entry)) at(entry).event["dtype"] = dtype_name(dtype);
}

void TrainTrace::mark_settled(std::int64_t entry) {
  if (holds(entry)) at(entry).settled = true;
}

void TrainTrace::add_memory(const MemoryPeaks& peaks) {
  Json memory = memory_event(peaks);
  if (holds(closing_)) {
    at(closing_).before.push_back(memory.dump());
  } else {
    add(std::move(memory));
  }
}

void TrainTrace::flush(TraceWriter& writer, bool all) {
  std::vector<std::string> lines;
  while (!entries_.empty() && (all || entries_.front().step < 0 || entries_.front().settled)) {
    for (auto& line : entries_.front().before) lines.push_back(std::move(line));
    lines.push_back(entries_.front().event.dump());
    entries_.pop_front();
    ++first_;
  }
  if (!lines.empty()) writer.write_block(lines);
}

}  // namespace vxperf::detail
