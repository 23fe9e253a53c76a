// The few CUDA driver API types and entry points the CUDA backend uses, declared here so that
// nothing in vxperf includes a CUDA header or links against libcuda. Values and signatures are the
// driver API's (cuda.h, CUDA 11.x-13.x); the fake driver in tests/fake_cuda implements the same.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vxperf::cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUevent = struct CUevent_st*;
using CUstream = struct CUstream_st*;

inline constexpr CUresult kSuccess = 0;                // CUDA_SUCCESS
inline constexpr CUresult kErrorNotInitialized = 3;    // CUDA_ERROR_NOT_INITIALIZED
inline constexpr CUresult kErrorDeinitialized = 4;     // CUDA_ERROR_DEINITIALIZED
inline constexpr CUresult kErrorNoDevice = 100;        // CUDA_ERROR_NO_DEVICE
inline constexpr CUresult kErrorInvalidDevice = 101;   // CUDA_ERROR_INVALID_DEVICE
inline constexpr CUresult kErrorInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT
inline constexpr CUresult kErrorInvalidHandle = 400;   // CUDA_ERROR_INVALID_HANDLE
inline constexpr CUresult kErrorNotReady = 600;        // CUDA_ERROR_NOT_READY
inline constexpr CUresult kErrorLaunchFailed = 719;    // CUDA_ERROR_LAUNCH_FAILED

inline constexpr unsigned kEventDefault = 0;  // CU_EVENT_DEFAULT: timing enabled
// CU_STREAM_LEGACY: the legacy default stream, whatever the per-thread default stream setting.
inline CUstream legacy_stream() { return reinterpret_cast<CUstream>(std::uintptr_t{0x1}); }

// Entry point signatures, named after the symbols libcuda.so.1 exports (the `_v2` ones where
// cuda.h maps the plain name to them).
using cuInit_t = CUresult (*)(unsigned flags);
using cuDeviceGetCount_t = CUresult (*)(int* count);
using cuDeviceGet_t = CUresult (*)(CUdevice* device, int ordinal);
using cuDeviceGetName_t = CUresult (*)(char* name, int len, CUdevice device);
using cuDevicePrimaryCtxRetain_t = CUresult (*)(CUcontext* ctx, CUdevice device);
using cuDevicePrimaryCtxRelease_v2_t = CUresult (*)(CUdevice device);
using cuCtxGetCurrent_t = CUresult (*)(CUcontext* ctx);
using cuCtxPushCurrent_v2_t = CUresult (*)(CUcontext ctx);
using cuCtxPopCurrent_v2_t = CUresult (*)(CUcontext* ctx);
using cuCtxSynchronize_t = CUresult (*)();
using cuEventCreate_t = CUresult (*)(CUevent* event, unsigned flags);
using cuEventRecord_t = CUresult (*)(CUevent event, CUstream stream);
using cuEventQuery_t = CUresult (*)(CUevent event);
using cuEventElapsedTime_t = CUresult (*)(float* ms, CUevent start, CUevent end);
using cuEventDestroy_v2_t = CUresult (*)(CUevent event);
using cuMemGetInfo_v2_t = CUresult (*)(std::size_t* free, std::size_t* total);
using cuGetErrorName_t = CUresult (*)(CUresult error, const char** name);
// "[domain]:[bus]:[device].[function]" in hexadecimal ("0000:3B:00.0"): what NVML finds a device
// by.
using cuDeviceGetPCIBusId_t = CUresult (*)(char* pci_bus_id, int len, CUdevice device);
// Profiler capture of the current context (cudaProfiler.h): what `nsys profile
// --capture-range=cudaProfilerApi` records between.
using cuProfilerStart_t = CUresult (*)();
using cuProfilerStop_t = CUresult (*)();

}  // namespace vxperf::cuda
