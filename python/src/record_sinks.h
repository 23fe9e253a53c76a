// Records in Python: every record the engine settles handed to a Python function as a dict (the
// keys, order and presence of its JSON line: vxperf::walk_record), and the request this thread
// finished last.
//
// Thread safety: records are settled on whatever thread ends a request or a training step; each is
// handed to the handler on the thread whose call into the engine settled it, when that call
// returns into Python (GIL held, no engine lock held). last_request() reads the calling thread's
// own slot.
#pragma once

#include <pybind11/pybind11.h>

namespace vxperf::python {

// Registers the engine sink that keeps each thread's last request and, while a handler is set,
// keeps every record for it. False when metrics are off.
bool install_record_sinks();

// Hands the records settled since the last call to the handler (GIL held, outside the engine).
// Called by every binding function that may settle a record, as it returns.
void deliver_pending();

// handler(record: dict) for every record from now on; None: none (records are not converted).
void set_record_handler(pybind11::object handler);

// The record of the request this thread finished last, as a dict; None before the first.
pybind11::object last_request();

// Whether each thread's last request keeps its call-by-call detail (the spans of the OpenTelemetry
// integration read it), and that detail as (failed, start_ts, ((start_s, seconds), ...) per
// stage); None before one or while not kept.
void keep_request_detail(bool keep);
pybind11::object last_request_detail();

// Adds install_record_sinks, deliver_records, set_record_handler and last_request to `m`.
void add_record_functions(pybind11::module_& m);

}  // namespace vxperf::python
