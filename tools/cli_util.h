// What the commands share: the command's row (name, usage, summary) and the run that answers
// --help and says a usage error in one line, the walk over a command's arguments with numbers that
// must be whole and in range, standard output that must have been written, output streamed onto a
// descriptor, and the exec of the LibTorch helper. Files are written with
// vxperf/file_io.h, as the library writes its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include "vxperf/file_io.h"

namespace vxperf::cli {

// Thrown by the parsers below and by a command on bad usage; run_command prints
// "vxperf NAME: message" and returns 2.
struct UsageError {
  std::string message;
};

enum CommandFlag : unsigned {
  // The command answers --help itself: `vxperf run`, where a --help after PROGRAM is the
  // program's.
  kOwnHelp = 1,
  // It needs LibTorch: vxperf execs vxperf-torch for it (exec_torch_helper), and a build without
  // LibTorch says so.
  kNeedsTorch = 2,
};

// A subcommand: its file (tools/<name>_command.cpp) defines the row, commands.h lists it.
struct Command {
  const char* name;
  int (*run)(int argc, char** argv);  // argv[0] is the command's name
  const char* usage;                  // printed for --help
  const char* summary;                // its line in `vxperf --help`
  unsigned flags = 0;                 // CommandFlag bits
  // Its line in `vxperf --help` where LibTorch is not here, when part of it still runs
  // (calibrate --list); nullptr: the summary.
  const char* summary_without_torch = nullptr;
};

// Runs `c`: its usage when an argument before "--" asks for help (unless kOwnHelp), else c.run
// (in vxperf-torch with kNeedsTorch). A UsageError, and anything else that escapes, is said in one
// line (exit status 2) rather than aborting.
int run_command(const Command& c, int argc, char** argv);

// The exit status once standard output is flushed: output that could not be written (a full disk,
// a closed pipe) makes the run a failure, since a status of 0 would say the output is there.
// `command`: the subcommand's name for the message, or nullptr.
int finish_output(int rc, const char* command);

// A program's main over its commands: runs the one argv[1] names in `table`, else `other` (help,
// version, an unknown name), and returns the exit status finish_output gives.
template <std::size_t N>
int command_main(const Command* const (&table)[N], int argc, char** argv,
                 int (*other)(int argc, char** argv)) {
  for (const Command* c : table) {
    if (argc >= 2 && std::string(argv[1]) == c->name) {
      return finish_output(run_command(*c, argc - 1, argv + 1), c->name);
    }
  }
  return finish_output(other(argc, argv), nullptr);
}

// `text` as a whole number in [min, max], or a UsageError naming `option`.
std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min,
                       std::int64_t max);
// `text` as a finite number in [min, max], or a UsageError naming `option`.
double parse_double(const std::string& option, const std::string& text, double min, double max);

// A command's arguments, walked in order:
//   for (Args args(argc, argv); args.next();) {
//     if (args.is("--json")) json = true;
//     else if (args.is("--threads")) threads = args.integer(1, 64);
//     else files.push_back(args.operand());
//   }
// Each problem is a UsageError naming the option.
class Args {
 public:
  Args(int argc, char** argv) : argc_(argc), argv_(argv) {}
  // Moves to the next argument; false past the last.
  bool next();
  const std::string& arg() const { return arg_; }
  // Whether the current argument is `option`; each option asked is kept, so that an unknown one
  // can be answered with the nearest (operand()).
  bool is(const char* option) const {
    asked_.push_back(option);
    return arg_ == option;
  }
  // The current option's value (the argument after it).
  std::string value();
  std::int64_t integer(std::int64_t min, std::int64_t max);
  double number(double min, double max);
  // The current argument as an operand: one that starts with '-' (other than "-") is an unknown
  // option, said with the nearest of the options asked for it ("did you mean --json?").
  const std::string& operand() const;
  // The index of the current argument in argv.
  int index() const { return i_; }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string arg_;
  mutable std::vector<std::string> asked_;  // the options asked of the current argument
};

// The modes `report` and `explain` share: --partial PATH (this part's state, for a later
// --merge), --merge (the partials given, as one) and --json.
struct PartialModes {
  std::optional<std::string> partial;
  bool merge = false;
  bool json = false;
  // Takes the current argument when it is one of the three.
  bool take(Args& args);
  // A UsageError for --merge with --partial.
  void check_one() const;
  // A UsageError for --partial with --json or a page (`html`): it writes the partial alone.
  void check_partial_alone(bool html) const;
};

// What kind of file `path` is when it is plainly one of another command's: "a PyTorch profiler
// trace: 'vxperf explain' reads it", "an event script ...: 'vxperf replay' ...", "a records file
// ...: 'vxperf report' ..."; "" when it is none of those (or cannot be read). `own` names the kind
// the asking command reads ("records", "trace", "script"), which is never said.
std::string kind_of_file(const std::string& path, const std::string& own);

// `paths` with each folder replaced by the records files in it (regular files whose names hold
// ".jsonl", rank files included, hidden ones and other commands' files left out), sorted. A
// folder without any is a UsageError.
std::vector<std::string> records_in_folders(const std::vector<std::string>& paths);

// The records files in the folder `path` now, by records_in_folders' rule, sorted; none (or no
// folder) gives none. `vxperf watch` asks again at every poll, so ranks that start late join.
std::vector<std::string> records_in_folder(const std::string& path);

// Each partial's name and bytes, in order (`vxperf explain --merge`, `vxperf report --merge`), a
// folder standing for the files in it, sorted by name; throws std::invalid_argument for one that
// cannot be read, UsageError for a folder with none.
std::vector<std::pair<std::string, std::string>> read_partials(
    const std::vector<std::string>& paths);

// The one of `candidates` nearest to `word` by edit distance, when it is near enough to be what
// was meant (at most a third of the word's letters off, and 2 at least); "" when none is.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// Why the first write to standard output failed (0: none has); finish_output says it.
int& stdout_error();

// Prints `text` on standard output, keeping the reason of a failure for the final check in main
// (a later flush that has nothing left to write no longer knows it).
void print(const std::string& text);

// An output stream buffer onto a descriptor (64 KiB at a time), for output streamed as it is made.
// The first write error is kept (error()) and later output dropped.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd), buf_(1 << 16) { drop(); }
  ~FdStreamBuf() override { sync(); }
  FdStreamBuf(const FdStreamBuf&) = delete;
  FdStreamBuf& operator=(const FdStreamBuf&) = delete;
  // 0 or the errno of the first failed write.
  int error() const { return error_; }
  // Forgets what is buffered and not yet written (a failed run's last part).
  void drop() { setp(buf_.data(), buf_.data() + buf_.size()); }

 protected:
  int overflow(int c) override;
  int sync() override { return flush_buffer(); }

 private:
  int flush_buffer();

  int fd_;
  std::vector<char> buf_;
  int error_ = 0;
};

// "" when `path` can be read as an input file, else why not ("is a directory").
std::string input_problem(const std::string& path);

// The commands that need LibTorch (demo, calibrate's probe, inspect) live in a helper program of
// their own, `vxperf-torch`, so that the others start without loading it. `vxperf NAME ARGS...`
// execs `HELPER NAME ARGS...` (the same arguments, output and exit status): the helper beside this
// executable (a build tree), else ../libexec/vxperf/ from it (an installed tree). Returns only
// when the helper cannot be run, saying why in one line (exit status 2).
int exec_torch_helper(const char* helper, const char* command, int argc, char** argv);

// Whether this build's LibTorch commands can run here: built in, or the helper found where
// exec_torch_helper looks (a wheel has neither).
bool torch_commands_here();

}  // namespace vxperf::cli
