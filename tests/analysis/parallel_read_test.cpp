// Records files read on several threads (src/analysis/line_batches.h): the handler sees exactly
// what a read on the calling thread gives it, in the same order, with the same line numbers, and a
// problem is said where it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "analysis_records.h"
#include "vxperf/records_reader.h"

namespace vxperf::analysis {
namespace {

using namespace test_records;

// Every call the reader makes, in order.
struct Calls : RecordHandler {
  std::vector<std::string> seen;
  void request(const RequestRecord& r) override { seen.push_back(to_json_line(r)); }
  void window(const TrainWindowRecord& w) override { seen.push_back(to_json_line(w)); }
  void end(const TrainEndRecord& e) override { seen.push_back(to_json_line(e)); }
  void warning(const std::string& text) override { seen.push_back("warning: " + text); }
};

// The same calls, a file read whole into a handler of its own on a worker, then joined in order;
// a file with a record of rank `refused` is not joined (it is read again, into this one).
struct FileCalls : Calls {
  int refused = -1;
  int joined = 0;
  bool has_refused = false;
  void request(const RequestRecord& r) override {
    has_refused = has_refused || r.rank == refused;
    Calls::request(r);
  }
  void begin_file(const std::string& name) override { seen.push_back("begin: " + name); }
  void end_file(const std::string& name) override { seen.push_back("end: " + name); }
  std::unique_ptr<RecordHandler> file_handler() override {
    auto own = std::make_unique<FileCalls>();
    own->refused = refused;
    return own;
  }
  bool join_file(RecordHandler& file) override {
    auto& from = dynamic_cast<FileCalls&>(file);
    if (from.has_refused) return false;
    seen.insert(seen.end(), from.seen.begin(), from.seen.end());
    ++joined;
    return true;
  }
};

class ParallelRead : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/vxperf-parallel-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // What a read with `threads` threads hands `handler` (its `seen`), or the error it ends with
  // (as the last entry).
  template <class Handler>
  static std::vector<std::string> read_into(Handler& handler, const std::vector<std::string>& paths,
                                            int threads, bool skip_bad_lines) {
    ReadOptions options;
    options.threads = threads;
    options.skip_bad_lines = skip_bad_lines;
    try {
      stream_record_files(paths, handler, options);
    } catch (const InputError& e) {
      handler.seen.push_back(std::string("error: ") + e.what());
    }
    return handler.seen;
  }
  static std::vector<std::string> read(const std::vector<std::string>& paths, int threads,
                                       bool skip_bad_lines = true) {
    Calls calls;
    return read_into(calls, paths, threads, skip_bad_lines);
  }

  std::string dir_;
};

// Many small files, and larger ones whose lines cross batch boundaries, with blank lines, lines
// that are not records, timestamps going backwards, an empty file and a torn last line.
TEST_F(ParallelRead, HandsOverWhatOneThreadDoesInTheSameOrder) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < 24; ++rank) {
    std::string text;
    for (int i = 0; i < 20; ++i) text += to_json_line(window(rank, i * 8, 8, 1.0 + i)) + "\n";
    paths.push_back(write("rank" + std::to_string(rank) + ".jsonl", text));
  }
  std::string big;
  std::int64_t line = 0, backwards = 0, first_other = 0, last_other = 0;
  for (int i = 0; i < 1200; ++i) {
    RequestRecord r = request(i % 3, i, 0.5 + i % 7, i < 2);
    r.ts = i == 1000 ? 1.0 : 1000.0 + i;  // one record out of order
    big += to_json_line(r) + "\n";
    if (i == 1000) backwards = line + 1;
    ++line;
    if (i % 197 == 0) big += "\n   \n", line += 2;
    if (i % 299 == 0) {
      big += "{\"kind\": \"other tool\"}\n";
      last_other = ++line;
      if (first_other == 0) first_other = line;
    }
  }
  paths.push_back(write("big.jsonl", big));
  paths.push_back(write("empty.jsonl", ""));
  paths.push_back(write("torn.jsonl", big + to_json_line(request(0, 9, 1.0)).substr(0, 50)));
  std::vector<std::string> one = read(paths, 1);
  ASSERT_GT(one.size(), 2800u);
  EXPECT_EQ(read(paths, 2), one);
  EXPECT_EQ(read(paths, 5), one);
  // The problems said are where they are in the files.
  std::vector<std::string> warnings;
  for (const auto& call : one) {
    if (call.rfind("warning: ", 0) == 0) warnings.push_back(call.substr(9));
  }
  ASSERT_EQ(warnings.size(), 7u);
  const std::string at = paths[24] + ":";
  EXPECT_EQ(warnings[0], at + std::to_string(first_other) +
                             ": unknown record kind \"other tool\" (expected request, "
                             "train_window or train_end) (line skipped)");
  EXPECT_EQ(warnings[1].rfind(at + std::to_string(backwards) + ": \"ts\" 1 of rank " +
                                  std::to_string(1000 % 3) + " is before",
                              0),
            0u)
      << warnings[1];
  EXPECT_EQ(warnings[2], paths[24] + ": 4 more lines skipped as not records (the last at line " +
                             std::to_string(last_other) + ")");
  EXPECT_EQ(
      warnings[5].rfind(paths[26] + ":" + std::to_string(line + 1) + ": torn last line skipped", 0),
      0u)
      << warnings[5];
}

// Several files on several threads, each read whole by a worker into a handler of its own, joined
// in file order: the calls one thread makes, in the same order; a file that cannot be joined is
// read again in its place; a problem is said where it was, after every file before it.
TEST_F(ParallelRead, FilesReadWholeJoinInOrder) {
  std::vector<std::string> paths;
  for (int f = 0; f < 12; ++f) {
    std::string text;
    for (int i = 0; i < 300; ++i) {
      RequestRecord r = request(f % 5, i, 0.5 + i % 7, i < 2);
      if (i == 100 + f) r.ts = 1.0;  // going backwards
      text += to_json_line(r) + "\n";
      if (i == 200 && f % 3 == 2) text += "{\"kind\": \"other tool\"}\n\n";
    }
    if (f == 7) text += to_json_line(request(0, 9, 1.0)).substr(0, 40);  // torn
    paths.push_back(write("w" + std::to_string(f) + ".jsonl", text));
  }
  paths.push_back(paths[3]);  // the same bytes: not read again
  paths.push_back(write("empty.jsonl", ""));
  // A copy; and a file of another's size and start, a byte past its start not the same.
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  paths.push_back(write("copy5.jsonl", slurp(paths[5])));
  std::string six = slurp(paths[6]);
  const std::size_t digit = six.find("\"e2e_s\": ", 20000) + 9;
  ASSERT_LT(digit, six.size());
  six[digit] = six[digit] == '1' ? '2' : '1';
  paths.push_back(write("not6.jsonl", six));
  auto calls = [&](int threads, int refused, bool skip, int* joined = nullptr) {
    FileCalls handler;
    handler.refused = refused;
    std::vector<std::string> seen = read_into(handler, paths, threads, skip);
    if (joined != nullptr) *joined = handler.joined;
    return seen;
  };
  int joined = 0;
  const std::vector<std::string> one = calls(1, -1, true, &joined);
  ASSERT_GT(one.size(), 12u * 300);
  EXPECT_EQ(joined, 0);  // one thread: every record to the handler itself
  EXPECT_EQ(std::count(one.begin(), one.end(),
                       "warning: " + paths[14] + ": the same bytes as " + paths[5] +
                           " (a file copied, or named twice): not read again"),
            1);
  EXPECT_EQ(std::count(one.begin(), one.end(), "begin: " + paths[15]), 1);  // read: not the same
  EXPECT_EQ(calls(3, -1, true, &joined), one);
  EXPECT_EQ(joined, 13);  // the repeats are read but not joined; the empty file is not read whole
  EXPECT_EQ(calls(2, 3, true, &joined), one);  // rank 3's files (3 and 8) read again
  EXPECT_EQ(joined, 11);
  EXPECT_EQ(calls(3, 0, true), one);  // files 0, 5 and 10, the first among them
  // Without skipping: the first bad line (file 2's) ends the read, whichever thread read it.
  const std::vector<std::string> strict = calls(1, -1, false);
  EXPECT_EQ(strict.back(), "error: " + paths[2] +
                               ":202: unknown record kind \"other tool\" "
                               "(expected request, train_window or train_end)");
  EXPECT_EQ(calls(3, -1, false), strict);
  EXPECT_EQ(calls(3, 0, false), strict);
}

// Without skipping, the first bad line ends the read, after every record before it.
TEST_F(ParallelRead, ABadLineEndsTheReadAfterWhatCameBefore) {
  std::vector<std::string> paths;
  for (int f = 0; f < 6; ++f) {
    std::string text;
    for (int i = 0; i < 500; ++i) {
      text += (f == 4 && i == 400) ? std::string("{not json}\n")
                                   : to_json_line(request(f, i, 1.0)) + "\n";
    }
    paths.push_back(write("f" + std::to_string(f) + ".jsonl", text));
  }
  paths.push_back(dir_ + "/missing.jsonl");
  std::vector<std::string> one = read(paths, 1, /*skip_bad_lines=*/false);
  ASSERT_EQ(one.size(), 4u * 500 + 400 + 1);
  EXPECT_EQ(one.back(), "error: " + paths[4] + ":401: not valid JSON");
  EXPECT_EQ(read(paths, 4, false), one);
  // A file that cannot be opened is said after the files before it.
  paths.erase(paths.begin() + 4);
  std::vector<std::string> missing = read(paths, 4, false);
  ASSERT_EQ(missing.size(), 5u * 500 + 1);
  EXPECT_EQ(missing.back().rfind("error: " + paths.back() + ": cannot open", 0), 0u);
}

// A regular file is read in parts of 256 KiB by the threads that parse them: a line that ends on a
// part's last byte, one longer than several parts, and a torn last line longer than a part are
// read as a stream (std::istream, no parts) reads them, with the same line numbers.
TEST_F(ParallelRead, AFileReadInPartsReadsAsAStream) {
  const std::size_t part = 256 << 10;
  std::string text = to_json_line(request(0, 0, 1.0));
  text += std::string(part - 1 - text.size(), ' ') + "\n";  // its newline: the part's last byte
  for (int i = 1; i < 300; ++i) text += to_json_line(request(0, i, 1.0)) + "\n";
  text += std::string(3 * part, 'x') + "\n";  // not JSON, across parts
  for (int i = 300; i < 900; ++i) text += to_json_line(request(1, i, 2.0)) + "\n";
  std::string torn = text + std::string(part + 100, 'y');
  for (const std::string& content : {text, torn}) {
    std::string path = write("parts.jsonl", content);
    Calls stream;
    std::ifstream in(path);
    ReadOptions options;
    options.skip_bad_lines = true;
    stream_records(in, path, stream, options);
    ASSERT_GT(stream.seen.size(), 900u);
    EXPECT_EQ(read({path}, 1), stream.seen);
    EXPECT_EQ(read({path}, 3), stream.seen);
  }
  EXPECT_EQ(
      read({dir_ + "/parts.jsonl"}, 3).back().rfind(dir_ + "/parts.jsonl:902: torn last line", 9),
      9u);
}

// Each line the fast path takes, read again the general way on the worker that parsed it.
TEST_F(ParallelRead, ChecksTheFastPathOnEveryThread) {
  // Two ranks' files (one file named twice would be read once: its second naming is a repeat).
  std::vector<std::string> paths;
  for (int rank : {1, 2}) {
    TrainWindowRecord w = full_window();
    w.rank = rank;
    std::string text;
    for (int i = 0; i < 600; ++i) text += to_json_line(w) + "\n";
    paths.push_back(write("full-" + std::to_string(rank) + ".jsonl", text));
  }
  Calls calls;
  ReadOptions options;
  options.threads = 3;
  options.check_fast_path = true;
  stream_record_files(paths, calls, options);
  EXPECT_EQ(calls.seen.size(), 1200u);
}

}  // namespace
}  // namespace vxperf::analysis
