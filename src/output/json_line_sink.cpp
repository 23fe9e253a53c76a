#include <utility>

#include "vxperf/sink.h"

namespace vxperf {
namespace {

class JsonLineSink final : public RecordSink {
 public:
  explicit JsonLineSink(std::function<void(std::string_view)> fn) : fn_(std::move(fn)) {}
  void on_request(const RequestRecord& record, const RequestDetail&) override {
    fn_(to_json_line(record));
  }
  void on_train_window(const TrainWindowRecord& record, const WindowDetail&) override {
    fn_(to_json_line(record));
  }
  void on_train_end(const TrainEndRecord& record) override { fn_(to_json_line(record)); }

 private:
  std::function<void(std::string_view)> fn_;
};

}  // namespace

std::shared_ptr<RecordSink> json_line_sink(std::function<void(std::string_view json_line)> fn) {
  return std::make_shared<JsonLineSink>(std::move(fn));
}

}  // namespace vxperf
