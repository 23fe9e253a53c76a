// The observer seam (vxperf/observer.h): every request, stage, step, micro-step and phase reaches
// an observer as it opens and closes, with its name and device, on the thread that made it; the
// numbers behind them follow once known; an engine without observers tells nobody anything.
#include "vxperf/observer.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"
#include "vxperf/inference.h"
#include "vxperf/markers.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using testing::TestEngine;

const char* kind_name(SpanKind kind) {
  static const char* const kNames[] = {"request", "stage", "step", "micro", "phase"};
  return kNames[static_cast<int>(kind)];
}

// Writes down every span as "+kind name @device" (begin) or "-kind name" (end).
struct Recorder : Observer {
  std::vector<std::string> spans;
  std::vector<Span> ends;
  std::vector<SettledRequest> requests;
  std::vector<TrainCall> calls;
  std::vector<std::thread::id> threads;
  int settled = 0;

  void on_begin(const Span& s) override {
    spans.push_back("+" + std::string(kind_name(s.kind)) + " " + std::string(s.name) + " @" +
                    std::to_string(s.device));
    threads.push_back(std::this_thread::get_id());
  }
  void on_end(const Span& s) override {
    spans.push_back("-" + std::string(kind_name(s.kind)) + " " + std::string(s.name));
    ends.push_back(s);
    threads.push_back(std::this_thread::get_id());
  }
  void on_request(const SettledRequest& r) override { requests.push_back(r); }
  void on_train_call(const TrainCall& c) override { calls.push_back(c); }
  void on_train_settled(std::uint64_t, std::optional<double>, std::int64_t) override {
    ++settled;
  }
};

TEST(Observer, RequestAndStagesOpenAndCloseWithNameAndDevice) {
  TestEngine t;
  auto seen = std::make_shared<Recorder>();
  t.engine->add_observer(seen);
  {
    RequestScope request(*t.engine, RequestOptions{0, nullptr});
    {
      StageScope s(kTextEncoder);
      t.clock->advance(0.1);
    }
    {
      StageScope s(kTransformer, 1024, 2);
      t.clock->advance(0.5);
    }
  }
  std::vector<std::string> expected = {
      "+request request @0",   "+stage text_encoder @0", "-stage text_encoder",
      "+stage transformer @0", "-stage transformer",     "-request request"};
  EXPECT_EQ(seen->spans, expected);
  // Ends carry both times: the stage's, as timed (observers are told outside the interval).
  ASSERT_EQ(seen->ends.size(), 3u);
  EXPECT_NEAR(seen->ends[1].t1 - seen->ends[1].t0, 0.5, 1e-9);
  EXPECT_NEAR(seen->ends[2].t1 - seen->ends[2].t0, 0.6, 1e-9);
  for (auto id : seen->threads) EXPECT_EQ(id, std::this_thread::get_id());
  // Then the settled request: every call, its device time, the stage's pricing shape.
  ASSERT_EQ(seen->requests.size(), 1u);
  const SettledRequest& r = seen->requests[0];
  EXPECT_EQ(r.device, 0);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].stage, "transformer");
  EXPECT_EQ(r.calls[1].tokens, 1024);
  EXPECT_EQ(r.calls[1].batch, 2);
  ASSERT_TRUE(r.readings.has_value());
  // The record is the same as without an observer.
  ASSERT_EQ(t.output->requests().size(), 1u);
}

TEST(Observer, TrainingStepsMicroStepsAndPhases) {
  TestEngine t;
  auto seen = std::make_shared<Recorder>();
  t.engine->add_observer(seen);
  Trainer& trainer = t.engine->trainer();
  int opt = 0;
  for (int step = 0; step < 2; ++step) {
    MicroStep micro(&trainer);
    { ModelCall c(Phase::kForward, 100, 1, &trainer); }
    { Backward b(&trainer); }
    { OptimizerStep o(&opt, true, &trainer); }
  }
  trainer.finish();
  std::vector<std::string> one_step = {
      "+step step @-1",    "+micro micro_step @-1", "+phase fwd @-1", "-phase fwd",
      "+phase bwd @-1",    "-phase bwd",            "+phase opt @-1", "-step step",
      "-phase opt",        "-micro micro_step"};
  std::vector<std::string> expected = one_step;
  expected.insert(expected.end(), one_step.begin(), one_step.end());
  EXPECT_EQ(seen->spans, expected);
  // Each timed call (fwd, bwd, opt; data and prep are the loop's, on the host clock), then its
  // settlement.
  ASSERT_EQ(seen->calls.size(), 6u);
  EXPECT_EQ(seen->calls[0].phase, Phase::kForward);
  EXPECT_EQ(seen->calls[0].tokens, 100);
  EXPECT_EQ(seen->calls[2].optimizer, &opt);
  EXPECT_EQ(seen->settled, 6);
}

TEST(Observer, ModelCallsSaidOnlyAtTheirEndBeginUnnamed) {
  TestEngine t;
  auto seen = std::make_shared<Recorder>();
  t.engine->add_observer(seen);
  Trainer& trainer = t.engine->trainer();
  TrainMark m = begin_model_call(&trainer);
  end_model_call(m, Phase::kVaeEncode);
  ASSERT_FALSE(seen->spans.empty());
  EXPECT_EQ(seen->spans.front(), "+phase model_call @-1");
  EXPECT_EQ(seen->spans.back(), "-phase vae_enc");
}

TEST(Observer, AddedLaterSeesWhatBeginsAfter) {
  TestEngine t;
  auto seen = std::make_shared<Recorder>();
  {
    RequestScope request(*t.engine);
    t.engine->add_observer(seen);  // this request keeps the observers it began with
    StageScope s(kTransformer);
  }
  EXPECT_TRUE(seen->spans.empty());
  {
    RequestScope request(*t.engine);
  }
  EXPECT_EQ(seen->spans.size(), 2u);
}

TEST(Observer, OneThatThrowsTakesNothingDown) {
  struct Throws : Observer {
    void on_begin(const Span&) override { throw std::runtime_error("no"); }
    void on_request(const SettledRequest&) override { throw std::runtime_error("no"); }
  };
  TestEngine t;
  t.engine->add_observer(std::make_shared<Throws>());
  auto seen = std::make_shared<Recorder>();
  t.engine->add_observer(seen);
  {
    RequestScope request(*t.engine);
    StageScope s(kTransformer);
    t.clock->advance(1);
  }
  EXPECT_EQ(t.output->requests().size(), 1u);
  EXPECT_EQ(seen->requests.size(), 1u);  // the next observer is told all the same
}

}  // namespace
}  // namespace vxperf
