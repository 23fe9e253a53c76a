// C-implemented callables of the extension: the per-call path of instrumented modules.
//
// TimedCall wraps a callable (a module's forward, a VAE's encode/decode, a decorated function) so
// that each call is one stage of this thread's open request, or one phase of the training step.
// The whole per-call path is C: one crossing into the engine per marker, no Python object made per
// call. Python is called back only to infer a transformer call's token count, and only while the
// open request has none for that stage yet.
//
// StageContext is the explicit `with vxperf.stage(...)` scope, in C for the same reason.
#pragma once

#include <Python.h>

namespace vxperf::python {

// Adds TimedCall, StageContext and the stage() factory to `module`. False with a Python error set
// on failure.
bool add_timed_types(PyObject* module);

// Switch read by stage(): false while metrics are off, so it returns the shared no-op scope.
void set_stage_scopes_enabled(bool on);

}  // namespace vxperf::python
