// Configuring the process-wide engine from code, instead of (or beside) the environment.
//
//   vxperf::Config config;
//   config.level = 1;                                  // on, whatever VIDEOX_PERF says
//   config.settings.json_path = "runs/perf.jsonl";     // VIDEOX_PERF_JSON still wins when set
//   config.sinks.push_back(std::make_shared<MySink>());  // every record, in process
//   vxperf::configure(std::move(config));              // before the first request or step
//
// The level follows the reference's install(level=...): given here, it is used whatever
// VIDEOX_PERF says; left unset, VIDEOX_PERF decides. Every other field is a default that the
// matching VIDEOX_PERF_* variable replaces when it is set, so a launch script can still redirect a
// program that configures itself.
//
// Thread safety: configure() may be called from any thread; the first engine use after it sees it.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "vxperf/engine.h"
#include "vxperf/settings.h"
#include "vxperf/sink.h"

namespace vxperf {

struct Config {
  // 0 off, 1 a line per request / window and exit summaries, 2 also every step. Unset: the
  // VIDEOX_PERF variable decides.
  std::optional<int> level;
  // Defaults for every other setting (settings.level is not read: see `level`).
  Settings settings;
  // Where lines go (default: stderr).
  LogFn log;
  // In-process receivers of every record, beside the records file.
  std::vector<std::shared_ptr<RecordSink>> sinks;
  // Rank, world size and sequence-parallel degree; unset: from the launcher's environment.
  std::optional<Topology> topology;
  // The all-gather of the live cross-rank view (VIDEOX_PERF_XRANK=1; see vxperf/xrank.h).
  RankExchange rank_exchange;
};

// Configures the process-wide engine. Returns true when the configuration will be used: before the
// engine was built, or while it is off (a program may switch metrics on later). Once the engine
// is on, only a higher `level` is taken (as the reference's repeated install does) and false is
// returned.
bool configure(Config config);

}  // namespace vxperf
