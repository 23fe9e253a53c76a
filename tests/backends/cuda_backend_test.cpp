// The CUDA backend over the fake driver (tests/fake_cuda): loaded through the same dlopen path as
// libcuda.so.1, with completion, elapsed times and errors scripted through the fake's control API.
#include "vxperf/cuda_backend.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fake_library.h"
#include "test_support.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::env_of;

// The fake's control API, resolved from the handle the backend's dlopen also gets.
struct FakeCuda : testing::FakeLibrary {
  void (*reset)() = nullptr;
  void (*set_device_count)(int) = nullptr;
  void (*set_init_error)(int) = nullptr;
  void (*set_device_name)(int, const char*) = nullptr;
  void (*set_memory)(int, std::uint64_t, std::uint64_t) = nullptr;
  void (*set_completion_queries)(int) = nullptr;
  void (*set_manual_completion)(int) = nullptr;
  void (*complete_all)() = nullptr;
  void (*push_elapsed)(float) = nullptr;
  void (*set_record_step_ms)(double) = nullptr;
  void (*fail)(const char*, int, int) = nullptr;
  long (*calls)(const char*) = nullptr;
  long (*events_created)() = nullptr;
  long (*live_events)() = nullptr;
  int (*syncs)(int) = nullptr;
  int (*records)(int) = nullptr;
  int (*last_sync_device)() = nullptr;
  int (*retained)(int) = nullptr;
  int (*touched)(int) = nullptr;
  int (*current_device)() = nullptr;
  void (*set_current_device)(int) = nullptr;
  std::uintptr_t (*last_record_stream)() = nullptr;
  unsigned (*last_event_flags)() = nullptr;

  FakeCuda() : FakeLibrary(VXPERF_FAKE_CUDA_PATH) {
    if (handle == nullptr) return;
    get(reset, "fake_cuda_reset");
    get(set_device_count, "fake_cuda_set_device_count");
    get(set_init_error, "fake_cuda_set_init_error");
    get(set_device_name, "fake_cuda_set_device_name");
    get(set_memory, "fake_cuda_set_memory");
    get(set_completion_queries, "fake_cuda_set_completion_queries");
    get(set_manual_completion, "fake_cuda_set_manual_completion");
    get(complete_all, "fake_cuda_complete_all");
    get(push_elapsed, "fake_cuda_push_elapsed");
    get(set_record_step_ms, "fake_cuda_set_record_step_ms");
    get(fail, "fake_cuda_fail");
    get(calls, "fake_cuda_calls");
    get(events_created, "fake_cuda_events_created");
    get(live_events, "fake_cuda_live_events");
    get(syncs, "fake_cuda_syncs");
    get(records, "fake_cuda_records");
    get(last_sync_device, "fake_cuda_last_sync_device");
    get(retained, "fake_cuda_retained");
    get(touched, "fake_cuda_touched");
    get(current_device, "fake_cuda_current_device");
    get(set_current_device, "fake_cuda_set_current_device");
    get(last_record_stream, "fake_cuda_last_record_stream");
    get(last_event_flags, "fake_cuda_last_event_flags");
  }
};

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fake.handle, nullptr) << dlerror();
    ASSERT_TRUE(fake.ok);
    fake.reset();
  }

  CudaOptions options() {
    CudaOptions o;
    o.library_path = VXPERF_FAKE_CUDA_PATH;
    o.notice = [this](std::string_view line) { notices.emplace_back(line); };
    return o;
  }

  std::shared_ptr<DeviceBackend> make() { return make_cuda_backend(options()); }

  // An engine on virtual host time over `backend`.
  std::unique_ptr<Engine> engine_over(std::shared_ptr<DeviceBackend> backend,
                                      std::map<std::string, std::string> env = {
                                          {"VIDEOX_PERF", "1"}}) {
    EngineOptions parts;
    parts.settings = Settings::parse(env_of(std::move(env)), nullptr);
    parts.clock = clock;
    parts.device = std::move(backend);
    parts.log = output->log_fn();
    parts.sinks.push_back(output);
    return std::make_unique<Engine>(std::move(parts));
  }

  // One request on `device` with `stages` transformer calls of `host_s` host seconds each.
  void run_request(Engine& engine, int device, int stages, double host_s = 0.001,
                   void* stream = nullptr) {
    RequestScope request(engine, RequestOptions{device, stream});
    for (int i = 0; i < stages; ++i) {
      StageScope s(kTransformer, 32760, 2);
      clock->advance(host_s);
    }
  }

  std::vector<Json> records() const {
    std::vector<Json> out;
    for (const auto& line : output->records()) out.push_back(Json::parse(line));
    return out;
  }

  FakeCuda fake;
  std::vector<std::string> notices;
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>(100.0);
  std::shared_ptr<testing::MemoryOutput> output = std::make_shared<testing::MemoryOutput>();
};

// ---- making the backend -------------------------------------------------------------------------

TEST_F(CudaBackendTest, MissingLibraryMeansHostOnlyWithOneNotice) {
  CudaOptions o = options();
  o.library_path = "/nonexistent/libcuda.so.1";
  EXPECT_EQ(make_cuda_backend(o), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("/nonexistent/libcuda.so.1"), std::string::npos);
  EXPECT_NE(notices[0].find("host-only"), std::string::npos);
}

TEST_F(CudaBackendTest, LibraryWithoutTheEntryPointsIsRejected) {
  CudaOptions o = options();
  o.library_path = "libm.so.6";
  EXPECT_EQ(make_cuda_backend(o), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("lacks cuInit"), std::string::npos);
}

TEST_F(CudaBackendTest, NoDeviceOrFailedInitMeansHostOnly) {
  fake.set_device_count(0);
  EXPECT_EQ(make(), nullptr);
  fake.set_device_count(2);
  fake.set_init_error(100);  // CUDA_ERROR_NO_DEVICE
  EXPECT_EQ(make(), nullptr);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_NE(notices[0].find("no CUDA device"), std::string::npos);
  EXPECT_NE(notices[1].find("cuInit"), std::string::npos);
}

TEST_F(CudaBackendTest, MakingTheBackendTouchesNoDevice) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->kind(), "cuda");
  EXPECT_TRUE(backend->available());
  EXPECT_EQ(fake.touched(0) + fake.touched(1), 0);
  EXPECT_EQ(fake.calls("cuDevicePrimaryCtxRetain"), 0);
  EXPECT_TRUE(notices.empty());
}

// ---- events -------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, PoolIsReusedAfterWarmUp) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  run_request(*engine, 1, 5);  // warm-up: fills the pool
  long created = fake.events_created();
  EXPECT_EQ(created, 10);
  EXPECT_EQ(fake.last_event_flags(), 0u);  // CU_EVENT_DEFAULT: timing enabled
  for (int i = 0; i < 20; ++i) run_request(*engine, 1, 5);
  EXPECT_EQ(fake.events_created(), created);  // steady state: no event created
  EXPECT_EQ(fake.records(1), 21 * 10);
  EXPECT_EQ(records().size(), 21u);
  // Events stay pooled until the backend goes; then every one is destroyed and the context
  // released.
  EXPECT_EQ(fake.live_events(), created);
  engine.reset();
  backend.reset();
  EXPECT_EQ(fake.live_events(), 0);
  EXPECT_EQ(fake.retained(1), 0);
}

TEST_F(CudaBackendTest, RequestSynchronizesOnlyItsOwnDevice) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  run_request(*engine, 1, 3);
  EXPECT_EQ(fake.syncs(1), 1);
  EXPECT_EQ(fake.last_sync_device(), 1);
  EXPECT_EQ(fake.syncs(0), 0);
  // Device 0 is not the device in use: never retained, pushed, synchronized or recorded on.
  EXPECT_EQ(fake.touched(0), 0);
  EXPECT_EQ(fake.records(0), 0);
  // The caller's thread is left with the context it had (none).
  EXPECT_EQ(fake.current_device(), -1);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["device"], "cuda:1");
}

TEST_F(CudaBackendTest, CurrentContextIsUsedAsIsAndLeftAlone) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  run_request(*engine, 1, 1);  // retains device 1's context
  long pushes = fake.calls("cuCtxPushCurrent_v2");
  fake.set_current_device(1);  // as a framework working on device 1 would have it
  run_request(*engine, 1, 4);
  EXPECT_EQ(fake.calls("cuCtxPushCurrent_v2"), pushes);  // nothing to push
  EXPECT_EQ(fake.current_device(), 1);
  fake.set_current_device(0);  // another device current: pushed for the calls, then restored
  run_request(*engine, 1, 1);
  EXPECT_GT(fake.calls("cuCtxPushCurrent_v2"), pushes);
  EXPECT_EQ(fake.calls("cuCtxPushCurrent_v2"), fake.calls("cuCtxPopCurrent_v2"));
  EXPECT_EQ(fake.current_device(), 0);
  EXPECT_EQ(fake.syncs(0), 0);
  EXPECT_EQ(fake.records(0), 0);
  fake.set_current_device(-1);
}

TEST_F(CudaBackendTest, RecordsOnTheCallersStreamOrTheLegacyDefault) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  EventId a = backend->record(1, nullptr);
  ASSERT_NE(a, kNoEvent);
  EXPECT_EQ(fake.last_record_stream(), 0x1u);  // CU_STREAM_LEGACY
  void* stream = reinterpret_cast<void*>(std::uintptr_t{0xabc0});
  EventId b = backend->record(1, stream);
  ASSERT_NE(b, kNoEvent);
  EXPECT_EQ(fake.last_record_stream(), 0xabc0u);
  backend->release(a);
  backend->release(b);

  // Through the engine: the request's stream reaches the driver.
  auto engine = engine_over(backend);
  run_request(*engine, 1, 1, 0.001, stream);
  EXPECT_EQ(fake.last_record_stream(), 0xabc0u);
}

TEST_F(CudaBackendTest, DeviceTimeComesFromElapsedOfCompletedEvents) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  fake.set_completion_queries(3);  // still running when recorded; the synchronize finishes it
  fake.push_elapsed(40.0f);
  fake.push_elapsed(60.0f);
  run_request(*engine, 1, 2, /*host_s=*/0.001);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const Json& t = recs[0]["stages"]["transformer"];
  EXPECT_EQ(t["count"], 2);
  EXPECT_DOUBLE_EQ(t["total_ms"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(t["max_ms"].get<double>(), 60.0);
  // The legacy entry point is not used where the _v2 one exists.
  EXPECT_EQ(fake.calls("cuEventElapsedTime_v2"), 2);
  EXPECT_EQ(fake.calls("cuEventElapsedTime"), 0);
}

TEST_F(CudaBackendTest, QueryIsNonBlockingAndElapsedOnlyOnceComplete) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  fake.set_completion_queries(2);
  EventId a = backend->record(1, nullptr);
  EventId b = backend->record(1, nullptr);
  EXPECT_FALSE(backend->query(b));
  EXPECT_FALSE(backend->query(b));
  EXPECT_TRUE(backend->query(b));
  fake.complete_all();
  EXPECT_TRUE(backend->query(a));
  auto ms = backend->elapsed_ms(a, b);
  ASSERT_TRUE(ms);
  EXPECT_DOUBLE_EQ(*ms, 1.0);  // the fake's default: record times 1 ms apart
  backend->release(a);
  backend->release(b);
  EXPECT_TRUE(notices.empty());
}

TEST_F(CudaBackendTest, DeviceNameFeedsThePeakTable) {
  fake.set_device_name(0, "NVIDIA H20");
  fake.set_device_name(1, "NVIDIA A100-SXM4-80GB");
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->device_name(1), "NVIDIA A100-SXM4-80GB");
  auto engine = engine_over(backend);
  ModelInfo wan = testing::wan_1_3b();
  engine->declare_model("transformer", wan);
  run_request(*engine, 1, 2, 0.5);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  ASSERT_TRUE(recs[0]["dit"].is_object());
  EXPECT_EQ(recs[0]["dit"]["peak_tflops"], 312.0);
  EXPECT_TRUE(recs[0]["dit"]["mfu"].is_number());
  EXPECT_EQ(fake.touched(0), 0);
}

TEST_F(CudaBackendTest, ConcurrentRequestsOnTwoDevices) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) run_request(*engine, t % 2, 4);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(records().size(), 100u);
  EXPECT_EQ(fake.syncs(0) + fake.syncs(1), 100);
  EXPECT_EQ(fake.records(0) + fake.records(1), 100 * 8);
  // At most one request per thread in flight, 8 events each.
  EXPECT_LE(fake.events_created(), 4 * 8);
  EXPECT_TRUE(notices.empty());
}

// ---- training: no synchronize, late completion, host fallback -----------------------------------

struct TrainLoop {
  Trainer& trainer;
  testing::ManualClock& clock;
  int optimizer = 0;
  // One global step: a forward of 10 ms and an optimizer step of 1 ms of host time.
  void step() {
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, 1024, 1, &trainer);
      clock.advance(0.010);
    }
    {
      OptimizerStep opt(&optimizer, /*synced=*/true, &trainer);
      clock.advance(0.001);
    }
  }
};

TEST_F(CudaBackendTest, TrainingSettlesLateCompletionsWithDeviceTime) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  Trainer& trainer = engine->trainer();
  trainer.set_device(1);
  fake.set_manual_completion(1);
  fake.set_record_step_ms(50.0);  // every pair: 50 ms of device time, longer than its host time
  TrainLoop loop{trainer, *clock};
  loop.step();
  loop.step();
  EXPECT_EQ(trainer.pending_steps(), 2u);  // the device has not reached them yet
  EXPECT_TRUE(records().empty());
  fake.complete_all();  // the device catches up
  loop.step();          // closing a step polls the pending ones
  auto recs = records();
  ASSERT_GE(recs.size(), 2u);
  EXPECT_DOUBLE_EQ(recs[0]["phases_s"]["fwd"].get<double>(), 0.050);
  EXPECT_DOUBLE_EQ(recs[1]["phases_s"]["fwd"].get<double>(), 0.050);
  EXPECT_EQ(recs[0]["device"], "cuda:1");
  // Training never synchronizes.
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0);
  EXPECT_EQ(fake.touched(0), 0);
  trainer.finish();
}

TEST_F(CudaBackendTest, TrainingFallsBackToHostTimeTwoStepsLater) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  Trainer& trainer = engine->trainer();
  trainer.set_device(1);
  fake.set_manual_completion(1);  // the device never reaches the events
  fake.set_record_step_ms(50.0);
  TrainLoop loop{trainer, *clock};
  for (int i = 0; i < 2; ++i) loop.step();
  EXPECT_TRUE(records().empty());
  EXPECT_GT(fake.calls("cuEventQuery"), 0);
  loop.step();  // two more steps have closed after step 0: it is read off the host clock
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NEAR(recs[0]["phases_s"]["fwd"].get<double>(), 0.010, 1e-9);
  EXPECT_EQ(fake.calls("cuEventElapsedTime_v2"), 0);  // never read before completion
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 0);
  // Its events went back to the pool, still pending on the device, and are reused.
  long created = fake.events_created();
  for (int i = 0; i < 5; ++i) loop.step();
  EXPECT_EQ(fake.events_created(), created);
  trainer.finish();
}

// ---- errors -------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, DriverErrorIsReportedOnceAndMeasurementGoesOnHostOnly) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  run_request(*engine, 1, 2);
  fake.fail("cuEventRecord", 719, -1);  // CUDA_ERROR_LAUNCH_FAILED, sticky
  run_request(*engine, 1, 2, 0.004);
  EXPECT_EQ(fake.calls("cuEventRecord"), 4 + 1);  // the failing call was the last one
  long before = fake.calls("*");
  for (int i = 0; i < 2; ++i) run_request(*engine, 1, 2, 0.004);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("cuEventRecord"), std::string::npos);
  EXPECT_NE(notices[0].find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos);
  EXPECT_NE(notices[0].find("host time only"), std::string::npos);
  // After the error the backend makes no driver call at all.
  EXPECT_EQ(fake.calls("*"), before);
  EXPECT_TRUE(backend->available());
  EXPECT_EQ(backend->record(1, nullptr), kNoEvent);
  auto recs = records();
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_NEAR(recs[3]["stages"]["transformer"]["total_ms"].get<double>(), 8.0, 1e-6);
}

TEST_F(CudaBackendTest, QueryErrorFallsBackToHostTime) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  fake.fail("cuEventQuery", 700, 1);  // CUDA_ERROR_ILLEGAL_ADDRESS, once
  run_request(*engine, 1, 2, 0.003);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("cuEventQuery"), std::string::npos);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NEAR(recs[0]["stages"]["transformer"]["total_ms"].get<double>(), 6.0, 1e-6);
  run_request(*engine, 1, 2);
  EXPECT_EQ(records().size(), 2u);
  EXPECT_EQ(notices.size(), 1u);
}

TEST_F(CudaBackendTest, SynchronizeErrorIsReportedOnce) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  fake.fail("cuCtxSynchronize", 719, -1);
  for (int i = 0; i < 3; ++i) run_request(*engine, 1, 1, 0.002);
  EXPECT_EQ(notices.size(), 1u);
  EXPECT_EQ(fake.calls("cuCtxSynchronize"), 1);
  EXPECT_EQ(records().size(), 3u);
}

TEST_F(CudaBackendTest, DeviceOutOfRangeIsReportedNotTouched) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->record(5, nullptr), kNoEvent);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("device index 5"), std::string::npos);
  EXPECT_EQ(fake.calls("cuEventRecord"), 0);
  // The other devices keep device timing, and a later driver error is still reported.
  EventId e = backend->record(1, nullptr);
  EXPECT_NE(e, kNoEvent);
  backend->release(e);
  fake.fail("cuEventRecord", 719, 1);
  EXPECT_EQ(backend->record(1, nullptr), kNoEvent);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_NE(notices[1].find("cuEventRecord"), std::string::npos);
}

// ---- memory -------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, WithoutProviderMemoryIsSampledFromTheDriverAtMarkers) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  const std::uint64_t gib = std::uint64_t{1} << 30;
  fake.set_memory(1, 10 * gib, 80 * gib);
  backend->reset_peak_memory(1);
  EventId a = backend->record(1, nullptr);
  fake.set_memory(1, 30 * gib, 80 * gib);
  EventId b = backend->record(1, nullptr);
  fake.set_memory(1, 20 * gib, 80 * gib);
  EventId c = backend->record(1, nullptr);
  auto peaks = backend->peak_memory(1);
  ASSERT_TRUE(peaks);
  EXPECT_EQ(peaks->allocated, 30 * gib);
  EXPECT_EQ(peaks->reserved, 30 * gib);
  backend->reset_peak_memory(1);  // a new interval starts from what is in use now
  EXPECT_EQ(backend->peak_memory(1)->allocated, 20 * gib);
  for (EventId e : {a, b, c}) backend->release(e);
  EXPECT_EQ(fake.touched(0), 0);

  // Per request, through the engine.
  auto engine = engine_over(backend);
  fake.set_memory(1, 5 * gib, 80 * gib);
  {
    RequestScope request(*engine, RequestOptions{1, nullptr});
    StageScope s(kTransformer);
    fake.set_memory(1, 12 * gib, 80 * gib);
  }
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["peak_alloc_bytes"], 12 * gib);
  EXPECT_EQ(recs[0]["peak_reserved_bytes"], 12 * gib);
}

TEST_F(CudaBackendTest, MemoryProviderReplacesDriverSampling) {
  std::vector<int> resets, asks;
  CudaOptions o = options();
  o.memory_peaks = [&](int device) -> std::optional<DeviceReadings> {
    asks.push_back(device);
    return DeviceReadings{111, 222};
  };
  o.reset_memory_peaks = [&](int device) { resets.push_back(device); };
  auto backend = make_cuda_backend(o);
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  run_request(*engine, 1, 3);
  EXPECT_EQ(resets, std::vector<int>{1});
  EXPECT_EQ(asks, std::vector<int>{1});
  EXPECT_EQ(fake.calls("cuMemGetInfo_v2"), 0);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["peak_alloc_bytes"], 111);
  EXPECT_EQ(recs[0]["peak_reserved_bytes"], 222);
}

// ---- driver calls per stage (the count the benchmark reports) -----------------------------------

TEST_F(CudaBackendTest, DriverCallsPerStageInSteadyState) {
  auto backend = make();
  ASSERT_NE(backend, nullptr);
  auto engine = engine_over(backend);
  fake.set_current_device(1);
  run_request(*engine, 1, 10);  // warm-up
  long before = fake.calls("*");
  run_request(*engine, 1, 10);
  long per_request = fake.calls("*") - before;
  // Per stage: 2 x (cuCtxGetCurrent + cuEventRecord + cuMemGetInfo_v2) at the markers, then
  // 2 x cuEventQuery + cuEventElapsedTime at settle. Per request: cuCtxGetCurrent +
  // cuMemGetInfo_v2 (reset) and cuCtxGetCurrent + cuCtxSynchronize.
  EXPECT_EQ(per_request, 10 * 9 + 4);
  EXPECT_EQ(fake.calls("cuEventCreate"), 20);
  fake.set_current_device(-1);
}

}  // namespace
}  // namespace vxperf
