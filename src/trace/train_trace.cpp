#include "trace/train_trace.h"

#include "schema/event_kinds.h"
#include "trace/trace_events.h"
#include "trace/trace_writer.h"

namespace vxperf::internal {

void TrainTrace::push(Json event, std::int64_t step, std::uint64_t id) {
  Entry entry;
  entry.event = std::move(event);
  entry.step = step;
  entry.id = id;
  entries_.push_back(std::move(entry));
}

TrainTrace::Entry* TrainTrace::find(std::uint64_t id) {
  if (id == 0) return nullptr;
  // Calls are asked for soon after they were added (a note) or as their step settles (the oldest
  // pending ones): a short walk either way.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->id == id) return &*it;
    if (it->id != 0 && it->id < id) return nullptr;
  }
  return nullptr;
}

void TrainTrace::add_call(const TrainCall& call) {
  const PhaseInfo& info = phase_info(call.phase);
  Json ev;
  if (info.event != nullptr) {  // a call phase: its own kind
    ev["ev"] = info.event;
  } else {
    ev["ev"] = event_name(EventKind::kPhase);
    ev["name"] = info.name;
  }
  ev["t0"] = call.t0;
  ev["t1"] = call.t1;
  ev["device_ms"] = nullptr;
  ev["ready_after"] = 0;
  if (call.phase == Phase::kForward && call.tokens > 0) {
    ev["tokens"] = call.tokens;
    ev["samples"] = call.samples;
  }
  if (call.fraction != 1.0) ev["frac"] = call.fraction;
  if (call.attn_fraction >= 0) ev["afrac"] = call.attn_fraction;
  if (info.bounds_step) {
    auto it = owners_.find(call.optimizer);
    if (it == owners_.end()) {
      it = owners_.emplace(call.optimizer, "optimizer" + std::to_string(owners_.size())).first;
    }
    ev["owner"] = it->second;
    ev["sync"] = call.synced;
  }
  if (call.dtype) ev["dtype"] = dtype_name(*call.dtype);
  if (call.bytes >= 0) ev["bytes"] = call.bytes;
  if (call.resume_step >= 0) ev["resume_step"] = call.resume_step;
  push(std::move(ev), call.step, call.id);
}

void TrainTrace::note(std::uint64_t id, const TrainCallNote& note) {
  Entry* entry = find(id);
  if (entry == nullptr) return;
  Json& ev = entry->event;
  if (note.fraction) {
    ev.erase("afrac");  // the whole call's word: its attention with it
    if (*note.fraction == 1.0) {
      ev.erase("frac");
    } else {
      ev["frac"] = *note.fraction;
    }
  }
  if (note.dtype) ev["dtype"] = dtype_name(*note.dtype);
}

void TrainTrace::settle(std::uint64_t id, std::optional<double> device_ms,
                        std::int64_t ready_after) {
  Entry* entry = find(id);
  if (entry == nullptr) return;
  if (device_ms) {
    entry->event["device_ms"] = *device_ms;
    entry->event["ready_after"] = ready_after;
  }
  entry->settled = true;
}

void TrainTrace::add_memory(const DeviceReadings& readings,
                            std::optional<std::uint64_t> closing_call) {
  Json memory = memory_event(readings);
  if (Entry* closing = closing_call ? find(*closing_call) : nullptr) {
    closing->before.push_back(memory.dump());
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
  }
  if (!lines.empty()) writer.write_block(lines);
}

}  // namespace vxperf::internal
