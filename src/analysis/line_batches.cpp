#include "analysis/line_batches.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace vxperf::analysis {
namespace {

// The record read into the batch's next slot; the record the slot held from the batch's last use
// goes back to the reader, its vectors' storage for the next line. Returns the slot.
// The storage a record's reading reuses from one line to the next (what its reset keeps).
std::vector<StageSummary>* storage(RequestRecord& r) { return &r.stages; }
std::vector<std::pair<std::string, double>>* storage(TrainWindowRecord& w) { return &w.phases_s; }
std::nullptr_t storage(TrainEndRecord&) { return nullptr; }

template <class Record>
std::size_t keep(std::vector<Record>& records, std::size_t& count, Record& read,
                 std::size_t room) {
  if (count < records.size()) {
    // The record moved in, the slot's storage handed back: a swap moved the whole record (a
    // kilobyte of optionals) three times.
    Record& slot = records[count];
    if constexpr (std::is_same_v<decltype(storage(slot)), std::nullptr_t>) {
      slot = std::move(read);
    } else {
      auto kept = std::move(*storage(slot));
      slot = std::move(read);
      *storage(read) = std::move(kept);
    }
  } else {
    if (records.empty()) records.reserve(room);
    records.push_back(std::move(read));
  }
  return count++;
}

std::string as_text(const RecordLineReader& reader, RecordLineReader::Got got) {
  return got == RecordLineReader::Got::kRequest  ? to_json_line(reader.request())
         : got == RecordLineReader::Got::kWindow ? to_json_line(reader.window())
         : got == RecordLineReader::Got::kEnd    ? to_json_line(reader.end())
                                                 : "(" + reader.problem() + ")";
}

}  // namespace

void LineBatch::parse(RecordLineReader& reader) {
  try {
    if (fill) {
      auto read = std::move(fill);
      fill = nullptr;
      read(*this, reader);
    }
    parse_lines(reader);
  } catch (...) {
    error = std::current_exception();
  }
}

void LineBatch::parse_lines(RecordLineReader& reader) {
  using Got = RecordLineReader::Got;
  // Room for the records of lines as long as the shortest vxperf writes, so that a batch's
  // records are never moved to grow their vector.
  const std::size_t room = size / 400 + 1;
  lines.reserve(room);
  each_line([&](const char* data, std::size_t length, std::int64_t number, bool complete) {
    Line line{number, complete};
    line.got = reader.read(data, length);
    if (check_fast_path && reader.fast()) {
      std::string fast = as_text(reader, line.got);
      Got again = reader.read_dom(data, length);
      if ((again != line.got || as_text(reader, again) != fast) && disagreed_at == 0) {
        disagreed_at = line.number;
        disagreement =
            "the fast path read " + fast + " where the DOM walk reads " + as_text(reader, again);
      }
    }
    switch (line.got) {
      case Got::kRequest:
        line.index = keep(requests, request_count, reader.request(), room);
        break;
      case Got::kWindow:
        line.index = keep(windows, window_count, reader.window(), room);
        break;
      case Got::kEnd:
        line.index = keep(ends, end_count, reader.end(), 1);
        break;
      case Got::kWrong:
        line.index = problems.size();
        problems.push_back(reader.problem());
        break;
      case Got::kNotJson:
        break;
    }
    lines.push_back(line);
  });
}

void LineBatch::clear_lines() {
  offset = 0;
  size = 0;
  ends_complete = true;
  lines.clear();
  line_count = 0;
  request_count = window_count = end_count = 0;  // the records stay, for a reader's next lines
  problems.clear();
  disagreed_at = 0;
  disagreement.clear();
}

void LineBatch::reuse() {
  clear_lines();
  fill = nullptr;
  whole.reset();
  error = nullptr;
}

LineBatches::LineBatches(unsigned workers) {
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
}

LineBatches::~LineBatches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();  // what no worker has begun is not parsed (its slot is freed below)
  }
  ready_.notify_all();
  for (auto& worker : workers_) worker.join();
  for (Slot* slot : order_) delete slot;
}

unsigned LineBatches::default_workers() {
  unsigned cores = std::thread::hardware_concurrency();
  return cores <= 1 ? 0 : std::min(cores, 8u);
}

void LineBatches::submit(LineBatch batch) {
  auto slot = std::make_unique<Slot>();
  slot->batch = std::move(batch);
  if (workers_.empty()) {
    slot->batch.parse(reader_);
    slot->done = true;
    order_.push_back(slot.release());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    order_.push_back(slot.get());
    queue_.push_back(slot.release());
  }
  ready_.notify_one();
}

LineBatch LineBatches::take() {
  std::unique_ptr<Slot> slot;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (order_.empty()) throw std::logic_error("LineBatches::take with nothing given");
    done_.wait(lock, [&] { return order_.front()->done; });
    slot.reset(order_.front());
    order_.pop_front();
  }
  return std::move(slot->batch);
}

void LineBatches::work() {
  RecordLineReader reader;  // this worker's parsers
  for (;;) {
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      slot = queue_.front();
      queue_.pop_front();
    }
    slot->batch.parse(reader);
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot->done = true;
    }
    done_.notify_all();
  }
}

}  // namespace vxperf::analysis
