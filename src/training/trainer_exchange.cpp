// The trainer's cross-rank exchange (VIDEOX_PERF_XRANK=1), apart from its step state machine
// (trainer_core.cpp): which windows are held for it, the exchange itself, and turning it off.
#include <exception>
#include <string>

#include "base/strings.h"
#include "training/trainer_core.h"
#include "training/xrank_view.h"

namespace vxperf::internal {

bool TrainerCore::xrank_on() {
  if (xrank_ == Xrank::kUndecided) {
    xrank_ = Xrank::kOff;
    if (engine_.settings().xrank) {
      if (engine_.topology().world_size < 2) {
        if (engine_.should_log()) {
          engine_.notice("vxperf: VIDEOX_PERF_XRANK=1 in a world of one rank: no cross-rank view");
        }
      } else if (!engine_.rank_exchange()) {
        engine_.notice(
            "vxperf: VIDEOX_PERF_XRANK=1 but no rank exchange was given "
            "(Engine::set_rank_exchange): no cross-rank view");
      } else {
        xrank_ = Xrank::kOn;
      }
    }
  }
  return xrank_ == Xrank::kOn;
}

void TrainerCore::xrank_off(const std::string& why) {
  xrank_ = Xrank::kOff;
  engine_.notice("vxperf: cross-rank view off: " + why + "; training goes on without it");
}

void TrainerCore::run_exchanges(std::optional<std::int64_t> closed_step) {
  while (!held_.empty()) {
    HeldWindow& head = held_.front();
    if (xrank_ == Xrank::kOn && closed_step && head.numbers.step_last + kSettleLag > *closed_step) {
      break;
    }
    if (xrank_ == Xrank::kOn) exchange(head.numbers, head.record);
    HeldWindow done = std::move(head);
    held_.pop_front();
    if (done.record) engine_.emit(*done.record, done.detail);
  }
}

void TrainerCore::exchange(RankWindow& numbers, std::optional<TrainWindowRecord>& record) {
  std::string span = strprintf("window step %lld-%lld", static_cast<long long>(numbers.step_first),
                               static_cast<long long>(numbers.step_last));
  RankExchange fn = engine_.rank_exchange();
  if (!fn) {
    xrank_off("the rank exchange was removed");
    return;
  }
  std::optional<std::vector<RankWindow>> answers;
  std::string why;
  double t0 = engine_.clock().now_s();
  try {
    answers = fn(numbers);
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "an unknown exception";
  }
  double took = engine_.clock().now_s() - t0;
  if (!answers) {
    xrank_off("the exchange of " + span + " failed" + (why.empty() ? "" : ": " + why));
    return;
  }
  std::string problem = check_answers(*answers, numbers);
  if (!problem.empty()) {
    xrank_off(span + ": " + problem);
    return;
  }
  if (record) {
    ParallelLayout layout = parallel_layout(engine_.topology());
    record->xrank = cross_rank_view(*answers, layout.cp * layout.tp, xrank_history_);
    record->xrank->exchange_s = took;
  }
}

void TrainerCore::stop_exchanges(const std::string& why) {
  if (off()) return;
  if (xrank_ == Xrank::kOn) xrank_off(why);
  xrank_ = Xrank::kOff;
  run_exchanges(std::nullopt);  // with the view off: the held windows go out as they are
}

}  // namespace vxperf::internal
