// Internal (not part of the API): what the inline stage scope of vxperf/inference.h reads. No
// public signature names anything declared here.
#pragma once

#include <cstdint>

namespace vxperf {

struct StageId;
struct StageMark;

namespace internal {

struct Request;

// The request open on this thread, or nullptr. Constant-initialized, so reading it is a plain
// thread-local load with no guard: the whole cost of a stage scope outside any request.
inline thread_local Request* current_request = nullptr;

// The two halves of a stage scope inside a request (src/inference/stages.cpp).
StageMark open_stage(StageId stage, std::int64_t tokens, std::int64_t batch, void* stream) noexcept;
void close_stage(const StageMark& mark) noexcept;

}  // namespace internal
}  // namespace vxperf
