#include "block_probe.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "call_through.h"
#include "ext_type.h"

// Static type objects are filled in add_block_types(); only their headers are initialized here.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace vxperf::python {
namespace {

// ---- what the package hands over ------------------------------------------------------------

PyTypeObject* tensor_type = nullptr;  // torch.Tensor
PyTypeObject* module_type = nullptr;  // torch.nn.Module
// dtype_reader(model, tensor) -> the engine's dtype name or None: what the model's matmuls run in,
// read off its first block's input (the package's _reading.block_dtype); nullptr: not read.
PyObject* dtype_reader = nullptr;
PyObject* watch_factory = nullptr;  // factory(module): sets the module's watch (or None)
PyObject* watch_key = nullptr;      // "_vxperf_watch", interned
PyObject* shape_name = nullptr;     // "shape", interned
// The sequence shards accelerate's maybe_context_parallel hands the forwards now (nested
// contexts multiply), beside a watch's own.
std::vector<long> sequence_shards;

long shard_factor() {
  long factor = 1;
  for (long s : sequence_shards) factor *= s;
  return factor;
}

// ---- BlockWatch -------------------------------------------------------------------------------

// A watched model: how many blocks a full forward runs, and its cost per sample as a function of
// its tokens T (linear*T + self_attn*T^2 + cross_attn*T), as the engine's cost model has it.
struct BlockWatch {
  PyObject_HEAD std::int64_t blocks;
  double linear;
  double self_attn;
  double cross_attn;
  bool uniform;      // every block the same size: the share that ran is a count
  PyObject* verify;  // verify() -> whether its probes are still where calls reach them
};

PyTypeObject watch_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// The attention products' part of cost().
double attention_cost(const BlockWatch* w, double self_share, double cross_share, double tokens) {
  return self_share * w->self_attn * tokens * tokens + cross_share * w->cross_attn * tokens;
}

double cost(const BlockWatch* w, double linear_share, double self_share, double cross_share,
            double tokens) {
  return linear_share * w->linear * tokens + self_share * w->self_attn * tokens * tokens +
         cross_share * w->cross_attn * tokens;
}

// BlockWatch(blocks, linear, self_attn, cross_attn, uniform, verify)
PyObject* watch_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  long long blocks = 0;
  double linear = 0;
  double self_attn = 0;
  double cross_attn = 0;
  int uniform = 1;
  PyObject* verify = Py_None;
  static const char* keywords[] = {"blocks",  "linear", "self_attn", "cross_attn",
                                   "uniform", "verify", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LdddpO", const_cast<char**>(keywords), &blocks,
                                   &linear, &self_attn, &cross_attn, &uniform, &verify)) {
    return nullptr;
  }
  if (blocks < 1) {
    PyErr_SetString(PyExc_ValueError, "BlockWatch: a model of at least 1 block");
    return nullptr;
  }
  auto* w = reinterpret_cast<BlockWatch*>(type->tp_alloc(type, 0));
  if (w == nullptr) return nullptr;
  w->blocks = blocks;
  w->linear = linear;
  w->self_attn = self_attn;
  w->cross_attn = cross_attn;
  w->uniform = uniform != 0;
  w->verify = Py_NewRef(verify);
  return reinterpret_cast<PyObject*>(w);
}

using WatchGc = GcSlots<BlockWatch, &BlockWatch::verify>;

PyObject* watch_reduce(PyObject* self, PyObject* /*unused*/) {
  auto* w = reinterpret_cast<BlockWatch*>(self);
  return Py_BuildValue("(O(LdddOO))", Py_TYPE(self), static_cast<long long>(w->blocks), w->linear,
                       w->self_attn, w->cross_attn, w->uniform ? Py_True : Py_False,
                       w->verify != nullptr ? w->verify : Py_None);
}

PyObject* watch_get_blocks(PyObject* self, void*) {
  return PyLong_FromLongLong(reinterpret_cast<BlockWatch*>(self)->blocks);
}
PyObject* watch_get_uniform(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<BlockWatch*>(self)->uniform);
}

PyMethodDef watch_methods[] = {
    {"__reduce__", watch_reduce, METH_NOARGS, "Pickles as the same watch."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef watch_getset[] = {
    {"blocks", watch_get_blocks, nullptr, "Blocks a full forward runs.", nullptr},
    {"uniform", watch_get_uniform, nullptr, "Whether every block is the same size.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- the thread's frames ----------------------------------------------------------------------

thread_local WorkFrame* current_frame = nullptr;

struct Shape {
  std::int64_t rows = 0;
  std::int64_t tokens = 0;     // 0: not a (rows, tokens, width) input
  PyObject* tensor = nullptr;  // borrowed: the input read, when a tensor
};

// Rows and tokens of a call's main input: `hidden_states`, else `x`, else its first argument; a
// (B, T, ...) tensor gives both, a list its length as the rows.
Shape input_shape(PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  Shape shape;
  PyObject* x = keyword_argument(args, nargsf, kwnames, "hidden_states");
  if (x == nullptr) x = keyword_argument(args, nargsf, kwnames, "x");
  if (x == nullptr && PyVectorcall_NARGS(nargsf) > 0) x = args[0];
  if (x == nullptr) return shape;
  if (PyList_Check(x) || PyTuple_Check(x)) {
    shape.rows = PySequence_Size(x);
    return shape;
  }
  if (tensor_type == nullptr || !PyObject_TypeCheck(x, tensor_type)) return shape;
  shape.tensor = x;
  PyObject* dims = PyObject_GetAttr(x, shape_name);
  if (dims != nullptr && PyTuple_Check(dims)) {
    Py_ssize_t n = PyTuple_GET_SIZE(dims);
    if (n >= 1) shape.rows = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, 0));
    if (n >= 3) shape.tokens = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, 1));
  }
  Py_XDECREF(dims);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return Shape{};
  }
  return shape;
}

// ---- BlockProbe -------------------------------------------------------------------------------

// A block's (or a part's) `_call_impl`: calls through, adding to the thread's frame when one of
// its model's is open. `part`: a module inside the blocks that a cache may answer (its share is
// taken off when it did); `inner`: a cache hook may skip the module's own forward, so a call
// counts only once ran() said it reached it.
struct BlockProbe {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* func;   // the class's _call_impl (or what the instance had before)
  PyObject* self;   // the module, put in front of the arguments; nullptr: func is bound
  PyObject* watch;  // its model's BlockWatch
  double linear_share;
  double self_share;
  double cross_share;
  long shard;  // the sequence shards its input is (sequence parallel): the sample's is this many
  bool part;
  bool inner;
};

PyTypeObject probe_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Asks the package once per frame what the model's matmuls ran in, from the first block input seen
// (autocast or a recipe in effect inside the call; the activations' dtype where the weights are
// stored in one no matmul runs in). An error is swallowed: the call keeps what it said.
void read_dtype(WorkFrame* f, PyObject* tensor) {
  f->dtype_read = true;
  if (dtype_reader == nullptr || f->model == nullptr || tensor == nullptr) return;
  PyObject* saved_type = nullptr;
  PyObject* saved_value = nullptr;
  PyObject* saved_trace = nullptr;
  PyErr_Fetch(&saved_type, &saved_value, &saved_trace);
  PyObject* name = PyObject_CallFunctionObjArgs(dtype_reader, f->model, tensor, nullptr);
  if (name != nullptr && PyUnicode_Check(name)) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(name, &size);
    if (text != nullptr && size > 0 && size < static_cast<Py_ssize_t>(sizeof f->dtype_)) {
      std::memcpy(f->dtype_, text, static_cast<std::size_t>(size));
    }
  }
  Py_XDECREF(name);
  PyErr_Clear();
  PyErr_Restore(saved_type, saved_value, saved_trace);
}

void add_run(WorkFrame* f, const BlockProbe* p, const Shape& s) {
  auto* w = reinterpret_cast<const BlockWatch*>(f->watch);
  ++f->runs;
  f->rows_sum += s.rows;
  if (s.rows > f->max_rows) f->max_rows = s.rows;
  if (f->first_tokens < 0) {
    f->first_tokens = s.tokens;
  } else if (s.tokens != f->first_tokens) {
    f->single_length = false;
  }
  if (s.tokens > f->max_tokens) f->max_tokens = s.tokens;
  double tokens = s.tokens > 0 ? static_cast<double>(s.tokens) : 1.0;
  const double rows = static_cast<double>(s.rows);
  f->work += rows * cost(w, p->linear_share, p->self_share, p->cross_share, tokens);
  f->attn_work += rows * attention_cost(w, p->self_share, p->cross_share, tokens);
}

void add_skip(WorkFrame* f, const BlockProbe* p, const Shape& s) {
  auto* w = reinterpret_cast<const BlockWatch*>(f->watch);
  double tokens = s.tokens > 0 ? static_cast<double>(s.tokens) : 1.0;
  const double rows = static_cast<double>(s.rows);
  f->skipped += rows * cost(w, p->linear_share, p->self_share, p->cross_share, tokens);
  f->attn_skipped += rows * attention_cost(w, p->self_share, p->cross_share, tokens);
}

PyObject* probe_vectorcall(PyObject* callable, PyObject* const* args, std::size_t nargsf,
                           PyObject* kwnames) {
  auto* p = reinterpret_cast<BlockProbe*>(callable);
  WorkFrame* f = current_frame;
  if (f == nullptr || f->watch != p->watch)
    return call_through(p->func, p->self, args, nargsf, kwnames);
  Shape shape = input_shape(args, nargsf, kwnames);
  if (!f->dtype_read) read_dtype(f, shape.tensor);
  shape.tokens *= p->shard * shard_factor();  // a shard's tokens: the sample's are this many
  if (!p->inner || f->depth >= WorkFrame::kMaxPending) {
    if (!p->part) add_run(f, p, shape);
    return call_through(p->func, p->self, args, nargsf, kwnames);
  }
  int slot = f->depth++;
  f->pending[slot] = WorkFrame::Pending{p, false};
  PyObject* result = call_through(p->func, p->self, args, nargsf, kwnames);
  f->depth = slot;
  bool ran = f->pending[slot].ran;
  if (!p->part && ran) add_run(f, p, shape);
  if (p->part && !ran && result != nullptr) add_skip(f, p, shape);
  return result;
}

// ran(): this module's own forward was reached in its innermost call open on this thread.
PyObject* probe_ran(PyObject* self, PyObject* /*unused*/) {
  for (WorkFrame* f = current_frame; f != nullptr; f = f->outer) {
    for (int i = f->depth - 1; i >= 0; --i) {
      if (f->pending[i].probe == self) {
        f->pending[i].ran = true;
        Py_RETURN_NONE;
      }
    }
  }
  Py_RETURN_NONE;
}

// BlockProbe(func, self, watch, part=False, linear_share=0, self_share=0, cross_share=0,
//            inner=False, shard=1)
PyObject* probe_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* func = nullptr;
  PyObject* self = nullptr;
  PyObject* watch = nullptr;
  int part = 0;
  int inner = 0;
  double linear_share = 0;
  double self_share = 0;
  double cross_share = 0;
  long shard = 1;
  static const char* keywords[] = {"func",       "self",        "watch", "part",  "linear_share",
                                   "self_share", "cross_share", "inner", "shard", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!|pddd$pl", const_cast<char**>(keywords),
                                   &func, &self, &watch_type, &watch, &part, &linear_share,
                                   &self_share, &cross_share, &inner, &shard)) {
    return nullptr;
  }
  if (!PyCallable_Check(func)) {
    PyErr_SetString(PyExc_TypeError, "BlockProbe: func must be callable");
    return nullptr;
  }
  auto* p = reinterpret_cast<BlockProbe*>(type->tp_alloc(type, 0));
  if (p == nullptr) return nullptr;
  p->vectorcall = probe_vectorcall;
  p->func = Py_NewRef(func);
  p->self = self == Py_None ? nullptr : Py_NewRef(self);
  p->watch = Py_NewRef(watch);
  p->part = part != 0;
  p->inner = inner != 0;
  p->linear_share = linear_share;
  p->self_share = self_share;
  p->cross_share = cross_share;
  p->shard = shard > 0 ? shard : 1;
  return reinterpret_cast<PyObject*>(p);
}

using ProbeGc = GcSlots<BlockProbe, &BlockProbe::func, &BlockProbe::self, &BlockProbe::watch>;

// A copied module (copy.deepcopy: an EMA model) gets a probe of its own, calling the copy.
PyObject* probe_reduce(PyObject* self, PyObject* /*unused*/) {
  auto* p = reinterpret_cast<BlockProbe*>(self);
  PyObject* made =
      Py_BuildValue("(OOOOddd)", p->func, p->self != nullptr ? p->self : Py_None, p->watch,
                    p->part ? Py_True : Py_False, p->linear_share, p->self_share, p->cross_share);
  if (made == nullptr) return nullptr;
  PyObject* state =
      Py_BuildValue("{s:O,s:l}", "inner", p->inner ? Py_True : Py_False, "shard", p->shard);
  if (state == nullptr) {
    Py_DECREF(made);
    return nullptr;
  }
  return Py_BuildValue("(ONN)", Py_TYPE(self), made, state);
}

// The state __reduce__ hands back: inner and shard, set as attributes.
PyObject* probe_setstate(PyObject* self, PyObject* state) {
  if (!PyDict_Check(state)) {
    PyErr_SetString(PyExc_TypeError, "BlockProbe.__setstate__: a dict");
    return nullptr;
  }
  auto* p = reinterpret_cast<BlockProbe*>(self);
  if (PyObject* inner = PyDict_GetItemString(state, "inner")) p->inner = PyObject_IsTrue(inner) > 0;
  if (PyObject* shard = PyDict_GetItemString(state, "shard")) {
    long n = PyLong_AsLong(shard);
    if (PyErr_Occurred()) return nullptr;
    p->shard = n > 0 ? n : 1;
  }
  Py_RETURN_NONE;
}

PyObject* probe_repr(PyObject* self) {
  auto* p = reinterpret_cast<BlockProbe*>(self);
  return PyUnicode_FromFormat("<vxperf %s probe of %R>", p->part ? "part" : "block", p->func);
}

PyObject* probe_get_wrapped(PyObject* self, void*) {
  auto* p = reinterpret_cast<BlockProbe*>(self);
  if (p->self == nullptr) return Py_NewRef(p->func);
  return PyMethod_New(p->func, p->self);
}
PyObject* probe_get_watch(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<BlockProbe*>(self)->watch);
}
PyObject* probe_get_inner(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<BlockProbe*>(self)->inner);
}
PyObject* probe_get_shard(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<BlockProbe*>(self)->shard);
}
int probe_set_shard(PyObject* self, PyObject* value, void*) {
  long n = value != nullptr ? PyLong_AsLong(value) : -1;
  if (PyErr_Occurred()) return -1;
  if (n < 1) {
    PyErr_SetString(PyExc_ValueError, "shard must be at least 1");
    return -1;
  }
  reinterpret_cast<BlockProbe*>(self)->shard = n;
  return 0;
}
int probe_set_inner(PyObject* self, PyObject* value, void*) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "inner cannot be deleted");
    return -1;
  }
  int truth = PyObject_IsTrue(value);
  if (truth < 0) return -1;
  reinterpret_cast<BlockProbe*>(self)->inner = truth != 0;
  return 0;
}

PyMethodDef probe_methods[] = {
    {"ran", probe_ran, METH_NOARGS,
     "Says that this module's own forward was reached in its call open on this thread."},
    {"__reduce__", probe_reduce, METH_NOARGS, "Pickles as the same probe of the same module."},
    {"__setstate__", probe_setstate, METH_O, "Sets inner and shard as pickled."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef probe_getset[] = {
    {"__wrapped__", probe_get_wrapped, nullptr, "The call implementation probed.", nullptr},
    {"watch", probe_get_watch, nullptr, "The BlockWatch of its model.", nullptr},
    {"inner", probe_get_inner, probe_set_inner,
     "Whether a call counts only once ran() says the module's forward was reached.", nullptr},
    {"shard", probe_get_shard, probe_set_shard,
     "The sequence shards its input is (sequence parallel; the sample's tokens are this many).",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- module functions ------------------------------------------------------------------------

// set_block_types(tensor_type, module_type, dtype_reader=None)
PyObject* set_block_types(PyObject* /*module*/, PyObject* args) {
  PyObject* tensor = nullptr;
  PyObject* module = nullptr;
  PyObject* reader = Py_None;
  if (!PyArg_ParseTuple(args, "O!O!|O", &PyType_Type, &tensor, &PyType_Type, &module, &reader)) {
    return nullptr;
  }
  if (reader != Py_None && !PyCallable_Check(reader)) {
    PyErr_SetString(PyExc_TypeError, "set_block_types: dtype_reader must be callable or None");
    return nullptr;
  }
  Py_XDECREF(reinterpret_cast<PyObject*>(tensor_type));
  Py_XDECREF(reinterpret_cast<PyObject*>(module_type));
  Py_XDECREF(dtype_reader);
  tensor_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(tensor));
  module_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(module));
  dtype_reader = reader == Py_None ? nullptr : Py_NewRef(reader);
  Py_RETURN_NONE;
}

PyObject* set_watch_factory(PyObject* /*module*/, PyObject* factory) {
  if (factory != Py_None && !PyCallable_Check(factory)) {
    PyErr_SetString(PyExc_TypeError, "set_watch_factory: a callable or None");
    return nullptr;
  }
  Py_XDECREF(watch_factory);
  watch_factory = factory == Py_None ? nullptr : Py_NewRef(factory);
  Py_RETURN_NONE;
}

PyObject* push_sequence_shards(PyObject* /*module*/, PyObject* arg) {
  long shards = PyLong_AsLong(arg);
  if (PyErr_Occurred()) return nullptr;
  sequence_shards.push_back(shards > 0 ? shards : 1);
  Py_RETURN_NONE;
}

PyObject* pop_sequence_shards(PyObject* /*module*/, PyObject* /*unused*/) {
  if (!sequence_shards.empty()) sequence_shards.pop_back();
  Py_RETURN_NONE;
}

PyObject* get_sequence_shards(PyObject* /*module*/, PyObject* /*unused*/) {
  return PyLong_FromLong(shard_factor());
}

PyMethodDef module_functions[] = {
    {"set_block_types", set_block_types, METH_VARARGS,
     "set_block_types(tensor_type, module_type, dtype_reader=None): what the probes read inputs "
     "and watches of, and what says the dtype a model's matmuls ran in from its first block's "
     "input."},
    {"set_watch_factory", set_watch_factory, METH_O,
     "set_watch_factory(factory): factory(module) sets the watch of a module first priced."},
    {"push_sequence_shards", push_sequence_shards, METH_O,
     "A context that hands the forwards 1/N of each sample's sequence begins."},
    {"pop_sequence_shards", pop_sequence_shards, METH_NOARGS, "... and ends."},
    {"sequence_shards", get_sequence_shards, METH_NOARGS,
     "The sequence shards the contexts open now hand the forwards (1: none)."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool is_watch(PyObject* watch) { return watch != nullptr && Py_TYPE(watch) == &watch_type; }

PyObject* WorkFrame::watch_of(PyObject* module) {
  if (module == nullptr || module_type == nullptr || !PyObject_TypeCheck(module, module_type)) {
    return nullptr;
  }
  // A borrowed reference to the module's __dict__ (no reference counting on the per-call path).
  PyObject** slot = _PyObject_GetDictPtr(module);
  PyObject* dict = slot != nullptr ? *slot : nullptr;
  if (dict == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* found = PyDict_GetItemWithError(dict, watch_key);
  if (found == nullptr && !PyErr_Occurred() && watch_factory != nullptr) {
    PyObject* made = PyObject_CallOneArg(watch_factory, module);
    Py_XDECREF(made);
    PyErr_Clear();  // a factory that failed leaves the module unwatched, never the call failing
    found = PyDict_GetItemWithError(dict, watch_key);
  }
  PyErr_Clear();
  return is_watch(found) ? Py_NewRef(found) : nullptr;
}

// ---- WorkFrame --------------------------------------------------------------------------------

WorkFrame::WorkFrame(PyObject* watch_, PyObject* model_, PyObject* const* args, std::size_t nargsf,
                     PyObject* kwnames) {
  if (!is_watch(watch_)) return;
  watch = Py_NewRef(watch_);
  model = model_;
  call_rows = input_shape(args, nargsf, kwnames).rows;
  outer = current_frame;
  current_frame = this;
}

WorkFrame::~WorkFrame() {
  if (watch == nullptr) return;
  current_frame = outer;
  Py_DECREF(watch);
}

std::optional<ForwardWork> WorkFrame::finish() {
  if (watch == nullptr) return std::nullopt;
  auto* w = reinterpret_cast<const BlockWatch*>(watch);
  ForwardWork said;
  if (runs == 0) {
    // No block ran: a cache hit, unless the probes were taken off or bypassed since (a module
    // compiled, its blocks replaced), when nothing can be said.
    PyObject* saved_type = nullptr;
    PyObject* saved_value = nullptr;
    PyObject* saved_trace = nullptr;
    PyErr_Fetch(&saved_type, &saved_value, &saved_trace);
    PyObject* ok = w->verify != nullptr && w->verify != Py_None ? PyObject_CallNoArgs(w->verify)
                                                                : Py_NewRef(Py_True);
    int in_place = ok != nullptr ? PyObject_IsTrue(ok) : 0;
    Py_XDECREF(ok);
    PyErr_Clear();
    PyErr_Restore(saved_type, saved_value, saved_trace);
    if (in_place != 1) return std::nullopt;
    said.batch = call_rows > 0 ? call_rows : 0;
    said.fraction = 0.0;
    return said;
  }
  std::int64_t rows = call_rows > max_rows ? call_rows : max_rows;
  if (rows <= 0) rows = 1;
  double fraction;
  double attention = -1;  // the attention products' share, where it is not the whole's
  if (w->uniform && single_length && skipped == 0.0) {
    // Blocks of one size at one length: the share of block-rows that ran, exactly.
    fraction = static_cast<double>(rows_sum) /
               (static_cast<double>(w->blocks) * static_cast<double>(rows));
  } else {
    double tokens = max_tokens > 0 ? static_cast<double>(max_tokens) : 1.0;
    double full = static_cast<double>(rows) * cost(w, 1.0, 1.0, 1.0, tokens);
    fraction = full > 0 ? (work - skipped) / full : 1.0;
    // Blocks of other shapes (side blocks of other widths) run another mix of linear and
    // attention work than a full forward: the attention's own share prices it.
    double full_attention = static_cast<double>(rows) * attention_cost(w, 1.0, 1.0, tokens);
    if (full_attention > 0) {
      attention = std::clamp((attn_work - attn_skipped) / full_attention, 0.0, 1.0);
      if (attention > 1.0 - 1e-12) attention = 1.0;
    }
  }
  if (!(fraction >= 0.0)) fraction = 0.0;
  if (fraction > 1.0 - 1e-12) fraction = 1.0;
  if (attention >= 0 && std::fabs(attention - fraction) > 1e-9) said.attn_fraction = attention;
  said.tokens = max_tokens;
  said.batch = rows;
  said.fraction = fraction;
  return said;
}

bool add_block_types(PyObject* module) {
  describe_type(
      watch_type, "vxperf._ext.BlockWatch", sizeof(BlockWatch),
      "BlockWatch(blocks, linear, self_attn, cross_attn, uniform, verify): a model whose "
      "blocks are probed, and its cost per sample over T tokens (linear*T + self_attn*T^2 + "
      "cross_attn*T).");
  watch_type.tp_new = watch_new;
  WatchGc::set(watch_type);
  if (!ready_type(watch_type, watch_methods, watch_getset)) return false;

  describe_type(
      probe_type, "vxperf._ext.BlockProbe", sizeof(BlockProbe),
      "BlockProbe(func, self, watch, part=False, linear_share=0, self_share=0, cross_share=0, *, "
      "inner=False, shard=1): a block's call implementation, adding what ran to the priced call "
      "open on "
      "this thread.");
  probe_type.tp_new = probe_new;
  ProbeGc::set(probe_type);
  call_by_vector(probe_type, offsetof(BlockProbe, vectorcall));
  probe_type.tp_repr = probe_repr;
  if (!ready_type(probe_type, probe_methods, probe_getset)) return false;

  watch_key = PyUnicode_InternFromString("_vxperf_watch");
  shape_name = PyUnicode_InternFromString("shape");
  if (watch_key == nullptr || shape_name == nullptr) return false;
  if (PyModule_AddObjectRef(module, "BlockWatch", reinterpret_cast<PyObject*>(&watch_type)) < 0 ||
      PyModule_AddObjectRef(module, "BlockProbe", reinterpret_cast<PyObject*>(&probe_type)) < 0) {
    return false;
  }
  return PyModule_AddFunctions(module, module_functions) == 0;
}

}  // namespace vxperf::python
