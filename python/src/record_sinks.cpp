#include "record_sinks.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vxperf/engine.h"
#include "vxperf/record_walk.h"
#include "vxperf/sink.h"

namespace py = pybind11;

namespace vxperf::python {
namespace {

// Builds nested dicts and lists from a record walk (GIL held).
class DictBuilder final : public RecordVisitor {
 public:
  py::object result() { return std::move(root_); }

  void begin_object(std::string_view key) override { open(key, py::dict()); }
  void end_object() override { stack_.pop_back(); }
  void begin_array(std::string_view key) override { open(key, py::list()); }
  void end_array() override { stack_.pop_back(); }
  void null(std::string_view key) override { put(key, py::none()); }
  void boolean(std::string_view key, bool value) override { put(key, py::bool_(value)); }
  void integer(std::string_view key, std::int64_t value) override { put(key, py::int_(value)); }
  void unsigned_integer(std::string_view key, std::uint64_t value) override {
    put(key, py::int_(value));
  }
  void number(std::string_view key, double value) override { put(key, py::float_(value)); }
  void string(std::string_view key, std::string_view value) override {
    put(key, py::str(value.data(), value.size()));
  }

 private:
  void open(std::string_view key, py::object container) {
    if (stack_.empty()) {
      root_ = container;
    } else {
      put(key, container);
    }
    stack_.push_back(std::move(container));
  }
  void put(std::string_view key, py::object value) {
    if (stack_.empty()) return;  // a walk always opens its record first
    py::handle top = stack_.back();
    if (py::isinstance<py::dict>(top)) {
      top.cast<py::dict>()[py::str(key.data(), key.size())] = std::move(value);
    } else {
      top.cast<py::list>().append(std::move(value));
    }
  }

  py::object root_ = py::none();
  std::vector<py::object> stack_;
};

template <class Record>
py::object to_dict(const Record& record) {
  DictBuilder builder;
  walk_record(record, builder);
  return builder.result();
}

// A settled record waiting for the handler: kept as the record itself, converted to a dict only
// when handed over.
struct Pending {
  std::shared_ptr<const RequestRecord> request;
  std::shared_ptr<const TrainWindowRecord> window;
  std::shared_ptr<const TrainEndRecord> end;

  py::object dict() const {
    if (request) return to_dict(*request);
    if (window) return to_dict(*window);
    return to_dict(*end);
  }
};

// The process's one records sink: a copy of each thread's last request, and the records waiting
// for the handler. It never calls Python itself: the engine holds its output lock while sinks
// run, and Python code (the handler, a sink it calls, a warning it prints) may come back into the
// engine or wait for a thread that is waiting for that lock. The binding hands the waiting
// records over when the call that settled them returns into Python (deliver_pending).
class PythonRecords final : public RecordSink {
 public:
  void on_request(const RequestRecord& record, const RequestDetail& detail) override {
    auto copy = std::make_shared<const RequestRecord>(record);
    last_ = copy;
    if (keep_detail_.load(std::memory_order_relaxed)) {
      last_detail_ = std::make_shared<const RequestDetail>(detail);
    }
    if (active_.load(std::memory_order_relaxed)) push(Pending{std::move(copy), nullptr, nullptr});
  }
  void on_train_window(const TrainWindowRecord& record, const WindowDetail&) override {
    if (active_.load(std::memory_order_relaxed)) {
      push(Pending{nullptr, std::make_shared<const TrainWindowRecord>(record), nullptr});
    }
  }
  void on_train_end(const TrainEndRecord& record) override {
    if (active_.load(std::memory_order_relaxed)) {
      push(Pending{nullptr, nullptr, std::make_shared<const TrainEndRecord>(record)});
    }
  }

  void set_handler(py::object handler) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = handler.is_none() ? nullptr : std::make_shared<py::object>(std::move(handler));
    active_.store(handler_ != nullptr, std::memory_order_relaxed);
    if (!handler_) pending_.clear();
  }

  // With the GIL held, outside every engine lock.
  void deliver() {
    if (waiting_.load(std::memory_order_acquire) == 0) return;  // the usual case: one load
    std::vector<Pending> batch;
    std::shared_ptr<py::object> handler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.swap(pending_);
      waiting_.store(0, std::memory_order_release);
      handler = handler_;
    }
    if (!handler) return;
    for (const Pending& p : batch) {
      try {
        (*handler)(p.dict());
      } catch (py::error_already_set& e) {
        // The handler reports its sinks' own errors; one that escapes it is not the program's.
        e.discard_as_unraisable("vxperf: handing a record to Python");
      } catch (...) {
      }
    }
  }

  static std::shared_ptr<const RequestRecord> last() { return last_; }
  static std::shared_ptr<const RequestDetail> last_detail() { return last_detail_; }
  void keep_detail(bool keep) { keep_detail_.store(keep, std::memory_order_relaxed); }

 private:
  void push(Pending p) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(p));
    waiting_.store(pending_.size(), std::memory_order_release);
  }

  std::mutex mu_;
  std::shared_ptr<py::object> handler_;  // copied out under mu_, called without it
  std::vector<Pending> pending_;
  std::atomic<bool> active_{false};
  std::atomic<std::size_t> waiting_{0};
  std::atomic<bool> keep_detail_{false};
  static thread_local std::shared_ptr<const RequestRecord> last_;
  static thread_local std::shared_ptr<const RequestDetail> last_detail_;  // while keep_detail_
};

thread_local std::shared_ptr<const RequestRecord> PythonRecords::last_;
thread_local std::shared_ptr<const RequestDetail> PythonRecords::last_detail_;

// Made with the engine, kept for the life of the process (as the engine is).
std::shared_ptr<PythonRecords>* sink_slot = nullptr;

}  // namespace

bool install_record_sinks() {
  Engine* engine = vxperf::engine();
  if (engine == nullptr) return false;
  if (sink_slot == nullptr) {
    sink_slot = new std::shared_ptr<PythonRecords>(std::make_shared<PythonRecords>());
    engine->add_sink(*sink_slot);
  }
  return true;
}

void deliver_pending() {
  if (sink_slot != nullptr) (*sink_slot)->deliver();
}

void set_record_handler(py::object handler) {
  if (sink_slot != nullptr) (*sink_slot)->set_handler(std::move(handler));
}

py::object last_request() {
  auto record = PythonRecords::last();
  if (!record) return py::none();
  return to_dict(*record);
}

void keep_request_detail(bool keep) {
  if (install_record_sinks()) (*sink_slot)->keep_detail(keep);
}

py::object last_request_detail() {
  auto detail = PythonRecords::last_detail();
  if (!detail) return py::none();
  py::list stages;
  for (std::size_t i = 0; i < detail->stage_calls_ms.size(); ++i) {
    const auto& ms = detail->stage_calls_ms[i];
    const auto& starts = detail->stage_calls_start_s[i];
    py::list calls;
    for (std::size_t j = 0; j < ms.size() && j < starts.size(); ++j) {
      calls.append(py::make_tuple(starts[j], ms[j] * 1e-3));
    }
    stages.append(py::tuple(calls));
  }
  return py::make_tuple(detail->failed, detail->start_ts, py::tuple(stages));
}

void add_record_functions(py::module_& m) {
  m.def("install_record_sinks", &install_record_sinks,
        "Adds the engine sink behind add_sink() and last_request(); False while metrics are off.");
  m.def("deliver_records", &deliver_pending,
        "Hands the records settled since to the handler (the binding does it on return).");
  m.def("set_record_handler", &set_record_handler, py::arg("handler"),
        "handler(record: dict) for every settled record from now on (None: none).");
  m.def("last_request", &last_request,
        "The record of the request this thread finished last, as a dict (None before one).");
  m.def("keep_request_detail", &keep_request_detail, py::arg("keep"),
        "Keeps each thread's last request's call times for last_request_detail() (spans).");
  m.def("last_request_detail", &last_request_detail,
        "(failed, start_ts, stages) of the request this thread finished last, while "
        "keep_request_detail(True): stages parallel to the record's, each a tuple of its calls' "
        "(start_s after the request's start, seconds as resolved); None before one.");
  m.def(
      "tracker_fields",
      [] {
        py::list fields;
        for (const auto& f : window_tracker_fields()) {
          fields.append(py::make_tuple(f.object, f.key, f.name));
        }
        return py::tuple(fields);
      },
      "The training window's fields the experiment trackers log, as (object, key, name): the "
      "record's record[object][key] (object \"\": the record's own) logged as \"perf/\" + name; "
      "the field table's order.");
}

}  // namespace vxperf::python
