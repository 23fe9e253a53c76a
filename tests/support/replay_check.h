// The replay check the live-trace tests share: a trace, replayed, gives the records and the
// "[Perf][rank" lines the live run gave (all but the wall-clock "ts").
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vxperf/event_script.h"
#include "vxperf/testing.h"

namespace vxperf::testing {

inline void expect_replay_reproduces(const MemoryOutput& live, const std::string& trace_path) {
  std::ifstream trace(trace_path);
  ASSERT_TRUE(trace) << trace_path;
  MemoryOutput replayed;
  replay(trace, replayed.log_fn(), replayed);
  // Every record, the training's final one too (its ledger runs to the trace's train_end).
  auto a = live.all_records();
  auto b = replayed.all_records();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto x = nlohmann::json::parse(a[i]);
    auto y = nlohmann::json::parse(b[i]);
    x.erase("ts");
    y.erase("ts");
    EXPECT_EQ(x, y) << "record " << i;
  }
  auto metrics = [](const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const auto& l : lines) {
      if (l.rfind("[Perf][rank", 0) == 0) out.push_back(l);
    }
    return out;
  };
  EXPECT_EQ(metrics(live.logs()), metrics(replayed.logs()));
}

}  // namespace vxperf::testing
