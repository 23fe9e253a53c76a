#include "timed_call.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "binding_api.h"
#include "block_probe.h"
#include "call_through.h"
#include "ext_type.h"

// Static type objects are filled in add_timed_types(); only their headers are initialized here.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace vxperf::python {
namespace {

namespace api = vxperf::binding;

enum Flags : unsigned {
  kPriced = 1u,         // infer tokens for pricing (transformer stages, the trained forward)
  kRecordOnError = 2u,  // a call that raises still counts (VAE methods, explicit scopes)
  kModuleCall = 4u,     // times a whole module call (its _call_impl, compiled call or forward)
  kInTraining = 8u,     // a phase timed only once a training loop uses the trainer (a library's
                        // frozen component, called before the loop or outside training too)
};

// ---- TimedCall ---------------------------------------------------------------------------------

struct TimedCall {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* func;   // what is called
  PyObject* self;   // prepended to the arguments when set (func is then the plain function)
  PyObject* owner;  // the module handed to the token inference (None for a plain function)
  PyObject* name;   // stage or phase name
  PyObject* infer;  // infer(owner, args, kwargs) -> (tokens, batch[, dtype]) | None
  // The owner's BlockWatch as the package last said it (Py_None: not watched), so that a
  // component's call looks nothing up; nullptr: looked up on the called module at each call.
  PyObject* watch;
  std::uint32_t stage;
  int phase;  // >= 0: a training phase; -1: an inference stage
  unsigned flags;
};

// Calls the wrapped callable with the same arguments (and `self` in front when set).
PyObject* call_wrapped(TimedCall* t, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  return call_through(t->func, t->self, args, nargsf, kwnames);
}

// What the Python inference reads off a call: its token count, and the dtype its matmuls run in
// when that is not the parameters' (autocast), else empty.
struct CallShape {
  std::int64_t tokens = 0;
  std::int64_t batch = 1;
  char dtype[8] = {};
};

// Asks the Python inference for (tokens, batch[, dtype]). Any failure in there is swallowed: an
// unpriced call is the worst outcome of a measurement problem.
void infer_shape(TimedCall* t, PyObject* const* args, std::size_t nargsf, PyObject* kwnames,
                 CallShape* shape) {
  if (t->infer == nullptr || t->infer == Py_None) return;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject* tuple = PyTuple_New(nargs);
  PyObject* kwargs = nullptr;
  PyObject* result = nullptr;
  if (tuple == nullptr) goto done;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(tuple, i, args[i]);
  }
  kwargs = PyDict_New();
  if (kwargs == nullptr) goto done;
  if (kwnames != nullptr) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
      if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) goto done;
    }
  }
  {
    PyObject* owner = t->owner != nullptr ? t->owner : Py_None;
    result = PyObject_CallFunctionObjArgs(t->infer, owner, tuple, kwargs, nullptr);
  }
  if (result != nullptr && PyTuple_Check(result) && PyTuple_GET_SIZE(result) >= 2) {
    long long n = PyLong_AsLongLong(PyTuple_GET_ITEM(result, 0));
    long long b = PyLong_AsLongLong(PyTuple_GET_ITEM(result, 1));
    if (!PyErr_Occurred() && n > 0) {
      shape->tokens = n;
      shape->batch = b >= 0 ? b : 1;  // a call on zero rows costs nothing
    }
    PyErr_Clear();
    PyObject* dtype = PyTuple_GET_SIZE(result) >= 3 ? PyTuple_GET_ITEM(result, 2) : nullptr;
    if (dtype != nullptr && PyUnicode_Check(dtype)) {
      Py_ssize_t size = 0;
      const char* text = PyUnicode_AsUTF8AndSize(dtype, &size);
      if (text != nullptr && size > 0 && size < static_cast<Py_ssize_t>(sizeof shape->dtype)) {
        std::memcpy(shape->dtype, text, static_cast<std::size_t>(size));
      }
    }
  }
done:
  Py_XDECREF(result);
  Py_XDECREF(kwargs);
  Py_XDECREF(tuple);
  PyErr_Clear();
}

// A frame gathering what the blocks of a priced call's module run (block_probe.h): the module is
// the timer's owner, else the call's first argument (a decorated method or function), whose own
// arguments follow it.
class CallWork {
 public:
  CallWork(const TimedCall* t, PyObject* const* args, std::size_t nargsf, PyObject* kwnames)
      : watch_(t->watch != nullptr ? Py_NewRef(t->watch)
                                   : WorkFrame::watch_of(module_of(t, args, nargsf))),
        frame_(watch_, module_of(t, args, nargsf), inputs(t, args, nargsf), input_count(t, nargsf),
               kwnames) {}
  ~CallWork() { Py_XDECREF(watch_); }
  CallWork(const CallWork&) = delete;
  CallWork& operator=(const CallWork&) = delete;
  // Tells the engine what the blocks computed (the stage's call, or the training forward), and
  // what they computed in, where read there (it beats what the call's own inputs said).
  void say(std::uint32_t stage) {
    if (auto work = frame_.finish()) api::note_forward_work(stage, *work);
    if (frame_.dtype()[0] != '\0') api::note_compute_dtype(stage, frame_.dtype());
  }

 private:
  static bool own_module(const TimedCall* t, std::size_t nargsf) {
    return t->owner == nullptr && PyVectorcall_NARGS(nargsf) > 0;
  }
  static PyObject* module_of(const TimedCall* t, PyObject* const* args, std::size_t nargsf) {
    if (t->owner != nullptr) return t->owner;
    return own_module(t, nargsf) ? args[0] : nullptr;
  }
  static PyObject* const* inputs(const TimedCall* t, PyObject* const* args, std::size_t nargsf) {
    return own_module(t, nargsf) ? args + 1 : args;
  }
  static std::size_t input_count(const TimedCall* t, std::size_t nargsf) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    return static_cast<std::size_t>(own_module(t, nargsf) ? n - 1 : n);
  }
  PyObject* watch_;  // owned; nullptr or Py_None: the frame is inert
  WorkFrame frame_;
};

// One timed call of the stage in this thread's open request.
PyObject* time_stage(TimedCall* t, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  CallShape shape;
  const bool priced = (t->flags & kPriced) != 0;
  if (priced && api::stage_needs_tokens(t->stage)) {
    infer_shape(t, args, nargsf, kwnames, &shape);
  }
  std::optional<CallWork> work;
  if (priced && t->watch != Py_None) work.emplace(t, args, nargsf, kwnames);
  vxperf::StageMark mark = api::begin_stage(t->stage, shape.tokens, shape.batch);
  if (shape.dtype[0] != '\0') api::note_compute_dtype(t->stage, shape.dtype);
  PyObject* result = call_wrapped(t, args, nargsf, kwnames);
  if (work && result != nullptr) work->say(t->stage);
  if (result != nullptr || (t->flags & kRecordOnError) != 0) {
    api::end_stage(mark);
  } else {
    // As a forward hook pair does: a forward that raised never reached its closing marker.
    api::drop_stage(mark);
  }
  return result;
}

// The module calls being timed on this thread, innermost last: a second timer of the same module
// (torch.compile's wrapper and its original, a module compiled after it was hooked) passes the
// call through, so that a module is never timed twice. A timer re-entered by itself (a module
// whose forward calls itself) nests, as two forward hooks would.
struct ActiveCall {
  PyObject* owner;
  const void* timer;
};
constexpr int kMaxActive = 16;
thread_local ActiveCall active_calls[kMaxActive];
thread_local int active_depth = 0;

bool timed_by_another(const TimedCall* t) {
  for (int i = 0; i < active_depth && i < kMaxActive; ++i) {
    if (active_calls[i].owner == t->owner && active_calls[i].timer != t) return true;
  }
  return false;
}

// Keeps a module call on the active list for the duration of a scope.
class ActiveScope {
 public:
  explicit ActiveScope(const TimedCall* t) {
    if (active_depth < kMaxActive) active_calls[active_depth] = ActiveCall{t->owner, t};
    ++active_depth;
  }
  ~ActiveScope() { --active_depth; }
  ActiveScope(const ActiveScope&) = delete;
  ActiveScope& operator=(const ActiveScope&) = delete;
};

PyObject* call_as_stage(TimedCall* t, PyObject* const* args, std::size_t nargsf,
                        PyObject* kwnames) {
  if (!api::in_request()) return call_wrapped(t, args, nargsf, kwnames);
  if ((t->flags & kModuleCall) != 0 && t->owner != nullptr) {
    if (timed_by_another(t)) return call_wrapped(t, args, nargsf, kwnames);
    ActiveScope active(t);
    return time_stage(t, args, nargsf, kwnames);
  }
  return time_stage(t, args, nargsf, kwnames);
}

PyObject* call_as_phase(TimedCall* t, PyObject* const* args, std::size_t nargsf,
                        PyObject* kwnames) {
  // A call inside an inference request (a validation pipeline in the loop) is the request's
  // stage, never a step's work.
  if (api::in_request() || ((t->flags & kInTraining) != 0 && !api::training_in_use()) ||
      !api::train_call_timed()) {
    return call_wrapped(t, args, nargsf, kwnames);
  }
  const bool priced = (t->flags & kPriced) != 0;
  std::optional<CallWork> work;
  if (priced && t->watch != Py_None) work.emplace(t, args, nargsf, kwnames);
  vxperf::TrainMark mark = api::train_call_begin(t->phase);
  CallShape shape;
  if (priced) infer_shape(t, args, nargsf, kwnames, &shape);
  if (shape.dtype[0] != '\0') api::note_compute_dtype(0, shape.dtype);
  PyObject* result = call_wrapped(t, args, nargsf, kwnames);
  if (work && result != nullptr) work->say(0);
  api::train_call_end(mark, t->phase, shape.tokens, shape.batch);
  return result;
}

PyObject* timed_vectorcall(PyObject* callable, PyObject* const* args, std::size_t nargsf,
                           PyObject* kwnames) {
  auto* t = reinterpret_cast<TimedCall*>(callable);
  if (t->phase >= 0) return call_as_phase(t, args, nargsf, kwnames);
  return call_as_stage(t, args, nargsf, kwnames);
}

using TimedGc = GcSlots<TimedCall, &TimedCall::func, &TimedCall::self, &TimedCall::owner,
                        &TimedCall::name, &TimedCall::infer, &TimedCall::watch>;

PyObject* none_to_null(PyObject* o) { return o == Py_None ? nullptr : o; }

// TimedCall(func, self, owner, name, flags, phase, infer)
PyObject* timed_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* func = nullptr;
  PyObject* self = Py_None;
  PyObject* owner = Py_None;
  PyObject* name = nullptr;
  unsigned flags = 0;
  int phase = -1;
  PyObject* infer = Py_None;
  static const char* keywords[] = {"func",  "self",  "owner", "name",
                                   "flags", "phase", "infer", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOU|IiO", const_cast<char**>(keywords), &func,
                                   &self, &owner, &name, &flags, &phase, &infer)) {
    return nullptr;
  }
  if (!PyCallable_Check(func)) {
    PyErr_SetString(PyExc_TypeError, "TimedCall: func must be callable");
    return nullptr;
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(name, &size);
  if (utf8 == nullptr) return nullptr;
  auto* t = reinterpret_cast<TimedCall*>(type->tp_alloc(type, 0));
  if (t == nullptr) return nullptr;
  t->vectorcall = timed_vectorcall;
  t->func = Py_NewRef(func);
  t->self = Py_XNewRef(none_to_null(self));
  t->owner = Py_XNewRef(none_to_null(owner));
  t->name = Py_NewRef(name);
  t->infer = Py_XNewRef(none_to_null(infer));
  t->flags = flags;
  t->phase = phase;
  t->stage = phase >= 0 ? 0 : api::stage_id(std::string(utf8, static_cast<std::size_t>(size)));
  return reinterpret_cast<PyObject*>(t);
}

// Bound like a function when set on a class (a decorated method).
PyObject* timed_descr_get(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

// Attributes the wrapper does not have are the wrapped callable's (__name__, __doc__, ...).
PyObject* timed_getattro(PyObject* self, PyObject* name) {
  PyObject* value = PyObject_GenericGetAttr(self, name);
  if (value != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return value;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<TimedCall*>(self)->func, name);
}

PyObject* timed_reduce(PyObject* self, PyObject* /*unused*/) {
  auto* t = reinterpret_cast<TimedCall*>(self);
  auto or_none = [](PyObject* o) { return o != nullptr ? o : Py_None; };
  return Py_BuildValue("(O(OOOOIiO))", Py_TYPE(self), t->func, or_none(t->self), or_none(t->owner),
                       t->name, t->flags, t->phase, or_none(t->infer));
}

PyObject* timed_repr(PyObject* self) {
  auto* t = reinterpret_cast<TimedCall*>(self);
  return PyUnicode_FromFormat("<vxperf %s %U of %R>", t->phase >= 0 ? "phase" : "stage", t->name,
                              t->func);
}

PyObject* get_wrapped(PyObject* self, void*) {
  auto* t = reinterpret_cast<TimedCall*>(self);
  if (t->self != nullptr) return PyMethod_New(t->func, t->self);
  return Py_NewRef(t->func);
}

PyObject* get_stage_name(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<TimedCall*>(self)->name);
}

PyObject* get_watch(PyObject* self, void*) {
  PyObject* watch = reinterpret_cast<TimedCall*>(self)->watch;
  return Py_NewRef(watch != nullptr ? watch : Py_None);
}

// `timer.watch = w`: the owner's BlockWatch, or None (not watched); `del timer.watch`: looked up
// on the called module at each call again.
int set_watch(PyObject* self, PyObject* value, void*) {
  if (value != nullptr && value != Py_None && !is_watch(value)) {
    PyErr_SetString(PyExc_TypeError, "TimedCall.watch: a BlockWatch or None");
    return -1;
  }
  auto* t = reinterpret_cast<TimedCall*>(self);
  PyObject* old = t->watch;
  t->watch = Py_XNewRef(value);
  Py_XDECREF(old);
  return 0;
}

PyObject* get_is_phase(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<TimedCall*>(self)->phase >= 0);
}

PyMethodDef timed_methods[] = {
    {"__reduce__", timed_reduce, METH_NOARGS, "Pickles as the same wrapper of the same callable."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef timed_getset[] = {
    {"__wrapped__", get_wrapped, nullptr, "The callable being timed.", nullptr},
    {"_vxperf_stage", get_stage_name, nullptr, "Stage or phase name.", nullptr},
    {"_vxperf_is_phase", get_is_phase, nullptr, "Whether calls are training phases.", nullptr},
    {"watch", get_watch, set_watch,
     "The owner's BlockWatch as the package said it (None: not watched; deleted: looked up on the "
     "called module at each call).",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject timed_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- StageContext ------------------------------------------------------------------------------

constexpr int kMaxDepth = 8;

// `with vxperf.stage("refiner", tokens, batch):`. Re-entering the same object nests, up to
// kMaxDepth levels (deeper entries are not measured).
struct StageContext {
  PyObject_HEAD std::uint32_t stage;
  std::int64_t tokens;
  std::int64_t batch;
  int depth;
  vxperf::StageMark marks[kMaxDepth];
};

PyObject* context_enter(PyObject* self, PyObject* /*unused*/) {
  auto* c = reinterpret_cast<StageContext*>(self);
  if (c->depth < kMaxDepth) c->marks[c->depth] = api::begin_stage(c->stage, c->tokens, c->batch);
  ++c->depth;
  return Py_NewRef(self);
}

PyObject* context_exit(PyObject* self, PyObject* const* /*args*/, Py_ssize_t /*nargs*/) {
  auto* c = reinterpret_cast<StageContext*>(self);
  if (c->depth > 0) {
    --c->depth;
    // Exception-safe like the C++ scope: a stage that raised still counts.
    if (c->depth < kMaxDepth) api::end_stage(c->marks[c->depth]);
  }
  Py_RETURN_FALSE;
}

void context_dealloc(PyObject* o) { Py_TYPE(o)->tp_free(o); }

PyMethodDef context_methods[] = {
    {"__enter__", context_enter, METH_NOARGS, "Opens one call of the stage."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(context_exit)),
     METH_FASTCALL, "Closes it; exceptions propagate."},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject context_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// A scope that does nothing, returned while metrics are off.
PyObject* null_context = nullptr;
bool stage_scopes_enabled = false;

PyObject* null_enter(PyObject* self, PyObject*) { return Py_NewRef(self); }
PyObject* null_exit(PyObject*, PyObject* const*, Py_ssize_t) { Py_RETURN_FALSE; }

PyMethodDef null_methods[] = {
    {"__enter__", null_enter, METH_NOARGS, "Does nothing."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(null_exit)),
     METH_FASTCALL, "Does nothing."},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject null_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Interned stage ids by name (str -> int), so that a stage() call does not take the engine's
// registry lock.
PyObject* stage_ids = nullptr;

bool lookup_stage(PyObject* name, std::uint32_t* id) {
  if (PyLong_Check(name)) {
    *id = static_cast<std::uint32_t>(PyLong_AsUnsignedLong(name));
    return !PyErr_Occurred();
  }
  if (!PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "stage name must be a str");
    return false;
  }
  PyObject* cached = PyDict_GetItemWithError(stage_ids, name);
  if (cached != nullptr) {
    *id = static_cast<std::uint32_t>(PyLong_AsUnsignedLong(cached));
    return true;
  }
  if (PyErr_Occurred()) return false;
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(name, &size);
  if (utf8 == nullptr) return false;
  *id = api::stage_id(std::string(utf8, static_cast<std::size_t>(size)));
  PyObject* value = PyLong_FromUnsignedLong(*id);
  if (value == nullptr) return false;
  int rc = PyDict_SetItem(stage_ids, name, value);
  Py_DECREF(value);
  return rc == 0;
}

// stage(name, tokens=0, batch=1)
PyObject* make_stage(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames) {
  if (!stage_scopes_enabled) return Py_NewRef(null_context);
  static const char* names[] = {"name", "tokens", "batch"};
  PyObject* values[3] = {nullptr, nullptr, nullptr};
  if (nargs > 3) {
    PyErr_SetString(PyExc_TypeError, "stage() takes at most 3 arguments");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) values[i] = args[i];
  if (kwnames != nullptr) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
      const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
      if (key == nullptr) return nullptr;
      int slot = -1;
      for (int j = 0; j < 3; ++j) {
        if (std::strcmp(key, names[j]) == 0) slot = j;
      }
      if (slot < 0 || values[slot] != nullptr) {
        PyErr_Format(PyExc_TypeError, "stage() got an unexpected or repeated argument '%s'", key);
        return nullptr;
      }
      values[slot] = args[nargs + k];
    }
  }
  if (values[0] == nullptr) {
    PyErr_SetString(PyExc_TypeError, "stage() missing the stage name");
    return nullptr;
  }
  std::uint32_t id = 0;
  if (!lookup_stage(values[0], &id)) return nullptr;
  std::int64_t tokens = 0;
  std::int64_t batch = 1;
  if (values[1] != nullptr && values[1] != Py_None) {
    tokens = PyLong_AsLongLong(values[1]);
    if (PyErr_Occurred()) return nullptr;
  }
  if (values[2] != nullptr && values[2] != Py_None) {
    batch = PyLong_AsLongLong(values[2]);
    if (PyErr_Occurred()) return nullptr;
  }
  auto* c = PyObject_New(StageContext, &context_type);
  if (c == nullptr) return nullptr;
  c->stage = id;
  c->tokens = tokens > 0 ? tokens : 0;
  c->batch = batch >= 0 ? batch : 1;
  c->depth = 0;
  return reinterpret_cast<PyObject*>(c);
}

PyMethodDef module_functions[] = {
    {"stage", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(make_stage)),
     METH_FASTCALL | METH_KEYWORDS,
     "stage(name, tokens=0, batch=1): a `with` scope timing one call of a stage in this thread's "
     "open request."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void set_stage_scopes_enabled(bool on) { stage_scopes_enabled = on; }

bool add_timed_types(PyObject* module) {
  describe_type(
      timed_type, "vxperf._ext.TimedCall", sizeof(TimedCall),
      "TimedCall(func, self, owner, name, flags=0, phase=-1, infer=None): calls func, timing "
      "each call as a stage of the open request (phase < 0) or as a training phase.");
  timed_type.tp_new = timed_new;
  TimedGc::set(timed_type);
  call_by_vector(timed_type, offsetof(TimedCall, vectorcall));
  timed_type.tp_descr_get = timed_descr_get;
  timed_type.tp_getattro = timed_getattro;
  timed_type.tp_repr = timed_repr;
  if (!ready_type(timed_type, timed_methods, timed_getset)) return false;

  describe_type(context_type, "vxperf._ext.StageContext", sizeof(StageContext),
                "One call of a stage, as a `with` scope (made by vxperf.stage()).");
  context_type.tp_dealloc = context_dealloc;
  if (!ready_type(context_type, context_methods)) return false;

  describe_type(null_type, "vxperf._ext.NullContext", sizeof(PyObject),
                "A `with` scope that does nothing (metrics off).");
  if (!ready_type(null_type, null_methods)) return false;
  null_context = PyObject_New(PyObject, &null_type);
  if (null_context == nullptr) return false;

  stage_ids = PyDict_New();
  if (stage_ids == nullptr) return false;

  PyObject* flag_priced = PyLong_FromUnsignedLong(kPriced);
  PyObject* flag_record = PyLong_FromUnsignedLong(kRecordOnError);
  PyObject* flag_module = PyLong_FromUnsignedLong(kModuleCall);
  PyObject* flag_training = PyLong_FromUnsignedLong(kInTraining);
  if (PyModule_AddObjectRef(module, "TimedCall", reinterpret_cast<PyObject*>(&timed_type)) < 0 ||
      PyModule_AddObjectRef(module, "StageContext", reinterpret_cast<PyObject*>(&context_type)) <
          0 ||
      PyModule_AddObjectRef(module, "NULL_SCOPE", null_context) < 0 ||
      PyModule_AddObject(module, "FLAG_PRICED", flag_priced) < 0 ||
      PyModule_AddObject(module, "FLAG_RECORD_ON_ERROR", flag_record) < 0 ||
      PyModule_AddObject(module, "FLAG_MODULE_CALL", flag_module) < 0 ||
      PyModule_AddObject(module, "FLAG_IN_TRAINING", flag_training) < 0) {
    return false;
  }
  return PyModule_AddFunctions(module, module_functions) == 0;
}

}  // namespace vxperf::python
