// Requests on different threads never mix: 8 threads x 200 requests x 20 stages, each thread on
// its own virtual clock with durations no other thread uses, and every record checked exactly.
// Also run under ThreadSanitizer by scripts/test.sh.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "test_support.h"
#include "vxperf/inference.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;

constexpr int kThreads = 8;
constexpr int kRequests = 200;
constexpr int kStages = 20;

thread_local double thread_now = 0.0;

// Each thread reads its own time, so what a record contains says which thread made it.
class PerThreadClock final : public Clock {
 public:
  double now_s() override { return thread_now; }
};

// Durations are multiples of 1/1024 s, so sums and the ms conversion are exact in binary.
double stage_seconds(int thread, int stage) { return (thread * 32 + stage + 1) / 1024.0; }

TEST(Concurrency, EightThreadsNeverMix) {
  EngineOptions parts;
  parts.settings.level = 1;
  parts.clock = std::make_shared<PerThreadClock>();
  auto output = std::make_shared<testing::MemoryOutput>();
  parts.log = output->log_fn();
  parts.sinks.push_back(output);
  Engine engine(std::move(parts));
  std::vector<StageId> ids;
  for (int s = 0; s < kStages; ++s) ids.push_back(stage("concurrency_stage_" + std::to_string(s)));

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      thread_now = 0.0;
      for (int r = 0; r < kRequests; ++r) {
        RequestScope request(engine);
        for (int s = 0; s < kStages; ++s) {
          StageScope scope(ids[s]);
          thread_now += stage_seconds(t, s);
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  auto records = output->records();
  ASSERT_EQ(records.size(), static_cast<std::size_t>(kThreads * kRequests));
  std::set<std::int64_t> indices;
  std::vector<int> per_thread(kThreads, 0);
  for (const auto& line : records) {
    Json r = Json::parse(line);
    indices.insert(r["req"].get<std::int64_t>());
    const Json& stages = r["stages"];
    ASSERT_EQ(stages.size(), static_cast<std::size_t>(kStages));
    // The first stage names the thread; every other stage must then be that thread's too.
    double first = stages["concurrency_stage_0"]["total_ms"].get<double>();
    int thread = static_cast<int>(first * 1024.0 / 1000.0 - 1) / 32;
    ASSERT_GE(thread, 0);
    ASSERT_LT(thread, kThreads);
    double e2e = 0;
    for (int s = 0; s < kStages; ++s) {
      const Json& st = stages["concurrency_stage_" + std::to_string(s)];
      ASSERT_EQ(st["count"], 1);
      ASSERT_EQ(st["total_ms"].get<double>(), stage_seconds(thread, s) * 1000.0);
      e2e += stage_seconds(thread, s);
    }
    ASSERT_EQ(r["e2e_s"].get<double>(), e2e);
    ++per_thread[thread];
  }
  EXPECT_EQ(indices.size(), static_cast<std::size_t>(kThreads * kRequests));
  EXPECT_EQ(*indices.rbegin(), kThreads * kRequests - 1);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_thread[t], kRequests) << "thread " << t;
}

}  // namespace
}  // namespace vxperf
