// What a transformer's blocks ran, read from the blocks' own inputs while a priced call runs.
//
// A caching transformer decides inside its forward how much of it to run: TeaCache returns a
// cached residual and runs no block, a CFG skip runs the blocks on half the rows, a first-block
// cache runs one block. The Python package (vxperf/_blocks.py) sets a BlockProbe as each block's
// `_call_impl` and hands the model a BlockWatch; while a priced call of the model is open on a
// thread (a WorkFrame), each block call adds its rows and tokens, read off its input's shape (no
// timing, no synchronize), and the call is priced at what ran (vxperf::ForwardWork). A probe whose
// module a cache hook may skip (diffusers' hook registry) counts a call only when the hook's
// innermost counter says the module's own forward ran (BlockProbe.ran()); a skipped part of a
// block (an attention module a cache answered) takes its share off the block's.
//
// Thread safety: frames are per thread; probes and watches are read-only after they are made,
// but for a probe's `inner` flag, which the package sets between requests (under the GIL).
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "vxperf/model.h"

namespace vxperf::python {

// The work a priced call's blocks did, gathered while the frame is the thread's innermost. Inert
// (no cost but a dictionary lookup) for a module that has no watch.
class WorkFrame {
 public:
  // The watch of `module` (a new reference; nullptr when it is none, or not a torch module): its
  // `_vxperf_watch`, the package's watch factory asked the first time a module is priced.
  static PyObject* watch_of(PyObject* module);
  // Opens a frame for one call of `model` (borrowed for the call) whose watch is `watch` (a
  // BlockWatch, else inert), whose arguments (after the model itself) are `args`.
  WorkFrame(PyObject* watch, PyObject* model, PyObject* const* args, std::size_t nargsf,
            PyObject* kwnames);
  ~WorkFrame();
  WorkFrame(const WorkFrame&) = delete;
  WorkFrame& operator=(const WorkFrame&) = delete;

  // What the call's blocks computed, once the call has returned; nullopt when the module is not
  // watched, or when no block ran and the watch is no longer in place (then nothing is said).
  std::optional<ForwardWork> finish();
  // The dtype the package read its matmuls ran in, at the first block's input ("" none said).
  const char* dtype() const { return dtype_; }

  // ---- what the probes add (block_probe.cpp) ----
  struct Pending {
    const void* probe;
    bool ran;
  };
  static constexpr int kMaxPending = 8;
  PyObject* watch = nullptr;  // a BlockWatch, or nullptr: inert
  PyObject* model = nullptr;  // borrowed: the call's module
  WorkFrame* outer = nullptr;
  std::int64_t call_rows = 0;  // rows of the call's own input, 0: unread
  std::int64_t runs = 0;       // block calls that ran
  std::int64_t rows_sum = 0;
  std::int64_t max_rows = 0;
  std::int64_t first_tokens = -1;
  std::int64_t max_tokens = 0;
  bool single_length = true;
  double work = 0;          // FLOPs per the watch's cost model, of the blocks that ran
  double skipped = 0;       // ... and of parts of them a cache answered
  double attn_work = 0;     // the attention products' of `work`
  double attn_skipped = 0;  // ... and of `skipped`
  Pending pending[kMaxPending];
  int depth = 0;
  bool dtype_read = false;
  char dtype_[8] = {};
};

// Whether `watch` is a BlockWatch.
bool is_watch(PyObject* watch);

// Adds BlockWatch, BlockProbe and the functions that set the watch factory, the tensor and module
// types and accelerate's sequence shards to `module`. False with a Python error set on failure.
bool add_block_types(PyObject* module);

}  // namespace vxperf::python
