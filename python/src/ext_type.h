// What the extension's own types (block_probe.cpp, timed_call.cpp) are made with: their name, size
// and doc, the vectorcall slots, readying with methods and attributes, and the garbage-collector
// slots (tp_traverse, tp_clear, tp_dealloc) written once for a type from the list of its members
// that hold references.
#pragma once

#include <Python.h>

namespace vxperf::python {

// Names and sizes `type`, with Py_TPFLAGS_DEFAULT.
inline void describe_type(PyTypeObject& type, const char* name, Py_ssize_t size, const char* doc) {
  type.tp_name = name;
  type.tp_basicsize = size;
  type.tp_flags = Py_TPFLAGS_DEFAULT;
  type.tp_doc = doc;
}

// Calls of `type`'s objects go through the vectorcall function each holds at `offset`.
inline void call_by_vector(PyTypeObject& type, Py_ssize_t offset) {
  type.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  type.tp_vectorcall_offset = offset;
  type.tp_call = PyVectorcall_Call;
}

// Readies `type` with its methods and attributes (none: nullptr); false with Python's error set.
inline bool ready_type(PyTypeObject& type, PyMethodDef* methods, PyGetSetDef* getset = nullptr) {
  type.tp_methods = methods;
  type.tp_getset = getset;
  return PyType_Ready(&type) >= 0;
}

// T's members Refs are each null or an owned reference; a T holds no other reference.
template <typename T, PyObject* T::*... Refs>
struct GcSlots {
  static int traverse(PyObject* o, visitproc visit, void* arg) {
    T* t = reinterpret_cast<T*>(o);
    for (PyObject* ref : {t->*Refs...}) Py_VISIT(ref);
    return 0;
  }

  static int clear(PyObject* o) {
    T* t = reinterpret_cast<T*>(o);
    (clear_ref(t->*Refs), ...);
    return 0;
  }

  static void dealloc(PyObject* o) {
    PyObject_GC_UnTrack(o);
    clear(o);
    Py_TYPE(o)->tp_free(o);
  }

  // Makes `type` a collected type with these slots.
  static void set(PyTypeObject& type) {
    type.tp_flags |= Py_TPFLAGS_HAVE_GC;
    type.tp_traverse = traverse;
    type.tp_clear = clear;
    type.tp_dealloc = dealloc;
  }

 private:
  static void clear_ref(PyObject*& ref) { Py_CLEAR(ref); }
};

}  // namespace vxperf::python
