// Calling a wrapped callable with the arguments a vectorcall received, and the C API 3.10 added,
// for the extension's C-implemented callables (timed_call.cpp, block_probe.cpp).
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstring>

#if PY_VERSION_HEX < 0x030A0000  // Python 3.9: what 3.10 added to the C API
static inline PyObject* Py_NewRef(PyObject* o) {
  Py_INCREF(o);
  return o;
}
static inline PyObject* Py_XNewRef(PyObject* o) {
  Py_XINCREF(o);
  return o;
}
static inline int PyModule_AddObjectRef(PyObject* module, const char* name, PyObject* value) {
  Py_INCREF(value);
  int rc = PyModule_AddObject(module, name, value);
  if (rc < 0) Py_DECREF(value);
  return rc;
}
#endif

namespace vxperf::python {

// Calls `func` with the same arguments, `self` in front when it is not null (func is then the
// plain function of a method of `self`).
inline PyObject* call_through(PyObject* func, PyObject* self, PyObject* const* args,
                              std::size_t nargsf, PyObject* kwnames) {
  if (self == nullptr) return PyObject_Vectorcall(func, args, nargsf, kwnames);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargsf & PY_VECTORCALL_ARGUMENTS_OFFSET) {
    // The caller left a free slot in front of args: borrow it for `self` (the vectorcall
    // protocol allows that, as long as it is restored).
    auto** slot = const_cast<PyObject**>(args) - 1;
    PyObject* saved = slot[0];
    slot[0] = self;
    PyObject* result = PyObject_Vectorcall(func, slot, nargs + 1, kwnames);
    slot[0] = saved;
    return result;
  }
  Py_ssize_t total = nargs + (kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0);
  PyObject* small[9];
  PyObject** buffer = small;
  if (total + 1 > static_cast<Py_ssize_t>(sizeof small / sizeof small[0])) {
    buffer = static_cast<PyObject**>(PyMem_Malloc(sizeof(PyObject*) * (total + 1)));
    if (buffer == nullptr) return PyErr_NoMemory();
  }
  buffer[0] = self;
  if (total > 0) std::memcpy(buffer + 1, args, sizeof(PyObject*) * total);
  PyObject* result = PyObject_Vectorcall(func, buffer, nargs + 1, kwnames);
  if (buffer != small) PyMem_Free(buffer);
  return result;
}

// The argument named `name` in a vectorcall's keywords, borrowed; nullptr when not given.
inline PyObject* keyword_argument(PyObject* const* args, std::size_t nargsf, PyObject* kwnames,
                                  const char* name) {
  if (kwnames == nullptr) return nullptr;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0) {
      return args[nargs + i];
    }
  }
  return nullptr;
}

}  // namespace vxperf::python
