#include "cli_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace vxperf::cli {

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min,
                       std::int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    throw UsageError{option + " takes a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'"};
  }
  return v;
}

double parse_double(const std::string& option, const std::string& text, double min, double max) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < min || v > max) {
    throw UsageError{option + " takes a number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'"};
  }
  return v;
}

int run_command(const Command& c, int argc, char** argv) {
  for (int i = 1; i < argc && !(c.flags & kOwnHelp); ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h") {
      std::fputs(c.usage, stdout);
      return 0;
    }
  }
#if defined(VXPERF_TORCH_HELPER)
  if (c.flags & kNeedsTorch) return exec_torch_helper(VXPERF_TORCH_HELPER, c.name, argc, argv);
#elif !defined(VXPERF_HAVE_TORCH)
  if (c.flags & kNeedsTorch) {
    std::fprintf(
        stderr,
        "vxperf %s: needs LibTorch, which this build leaves out (the Python wheel's "
        "command does); build vxperf from source, whose CMake finds the torch wheel's "
        "LibTorch (README: the two commands)%s\n",
        c.name,
        std::string(c.name) == "calibrate" ? ", or measure from Python: vxperf.calibrate()" : "");
    return 2;
  }
#endif
  try {
    return c.run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "vxperf %s: %s\n", c.name, e.message.c_str());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "vxperf %s: out of memory (the input is too large to handle at once)\n",
                 c.name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vxperf %s: failed: %s\n", c.name, e.what());
  }
  return 2;
}

bool Args::next() {
  if (++i_ >= argc_) return false;
  arg_ = argv_[i_];
  asked_.clear();
  return true;
}

std::string Args::value() {
  if (i_ + 1 >= argc_) throw UsageError{arg_ + " needs a value"};
  return argv_[++i_];
}

// value() moves past the option's value but leaves arg_ naming the option.
std::int64_t Args::integer(std::int64_t min, std::int64_t max) {
  return parse_int(arg_, value(), min, max);
}

double Args::number(double min, double max) { return parse_double(arg_, value(), min, max); }

const std::string& Args::operand() const {
  if (arg_.size() > 1 && arg_[0] == '-') {
    std::string meant = nearest(arg_, asked_);
    throw UsageError{"unknown option '" + arg_ + "'" +
                     (meant.empty() ? "" : " (did you mean " + meant + "?)")};
  }
  return arg_;
}

bool PartialModes::take(Args& args) {
  if (args.is("--partial")) {
    partial = args.value();
  } else if (args.is("--merge")) {
    merge = true;
  } else if (args.is("--json")) {
    json = true;
  } else {
    return false;
  }
  return true;
}

void PartialModes::check_one() const {
  if (merge && partial) throw UsageError{"--merge and --partial: one or the other"};
}

void PartialModes::check_partial_alone(bool html) const {
  if (partial && (json || html)) {
    throw UsageError{"--partial writes the partial only: --json and --html go with --merge"};
  }
}

std::string kind_of_file(const std::string& path, const std::string& own) {
  if (path == "-") return {};
  // Each of a job's thousand rank files is asked: its first 8 KiB read without stdio's buffer,
  // looked at without a copy.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buffer[8192];
  std::size_t n = 0;
  while (n < sizeof buffer) {
    const ssize_t got = ::read(fd, buffer + n, sizeof buffer - n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    n += static_cast<std::size_t>(got);
  }
  ::close(fd);
  const std::string_view head(buffer, n);
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const std::string_view line = head.substr(first, head.find('\n', first) - first);
  constexpr std::string_view kTraceEvents = "\"traceEvents\"";
  std::string kind, reader;
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    kind = "trace";
    reader = "gzip-compressed (a profiler trace? 'vxperf explain' reads .json.gz traces)";
  } else if (head[first] == '{' && memmem(head.data(), head.size(), kTraceEvents.data(),
                                          kTraceEvents.size()) != nullptr) {
    kind = "trace";
    reader = "a PyTorch profiler trace: 'vxperf explain' reads it";
  } else if (line.rfind("{\"ev\"", 0) == 0 || line.find("\"ev\":") != std::string_view::npos) {
    kind = "script";
    reader =
        "an event script (VIDEOX_PERF_TRACE): 'vxperf replay' re-aggregates it, "
        "'vxperf trace' draws it";
  } else if (line.rfind("{\"kind\"", 0) == 0) {
    kind = "records";
    reader = "a records file (VIDEOX_PERF_JSON): 'vxperf report' reads it";
  }
  return kind.empty() || kind == own ? std::string() : "is " + reader;
}

namespace {

// The regular files in the folder `path` whose names `keep` takes (hidden ones never), sorted.
template <class Keep>
std::vector<std::string> files_in(const std::string& path, Keep keep) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] != '.' && entry.is_regular_file(ec) && keep(entry, name)) {
      found.push_back(entry.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

// `paths` with each folder replaced by files_in(folder, keep); a folder with none is a
// UsageError, "FOLDER<none>".
template <class Keep>
std::vector<std::string> files_in_folders(const std::vector<std::string>& paths, Keep keep,
                                          const char* none) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    const std::vector<std::string> found = files_in(path, keep);
    if (found.empty()) throw UsageError{path + none};
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// A records file by its name, and not another command's file: a trace or event script beside the
// records (VIDEOX_PERF_TRACE in the same folder) is not what was meant.
bool is_records_file(const std::filesystem::directory_entry& entry, const std::string& name) {
  return name.find(".jsonl") != std::string::npos &&
         kind_of_file(entry.path().string(), "records").empty();
}

}  // namespace

std::vector<std::string> records_in_folder(const std::string& path) {
  return files_in(path, is_records_file);
}

std::vector<std::string> records_in_folders(const std::vector<std::string>& paths) {
  return files_in_folders(paths, is_records_file,
                          ": a folder with no records files in it (*.jsonl, *.jsonl.rankN)");
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  // Levenshtein distance, one row at a time.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        std::size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  const std::size_t most = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_distance = most + 1;
  for (const std::string& candidate : candidates) {
    std::size_t d = distance(word, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

int& stdout_error() {
  static int error = 0;
  return error;
}

void print(const std::string& text) {
  // Written whole, NULs too (a report partial's bytes).
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() && stdout_error() == 0) {
    stdout_error() = errno;
  }
}

int finish_output(int rc, const char* command) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || stdout_error() != 0) {
    int error = stdout_error() != 0 ? stdout_error() : errno;
    std::fprintf(stderr, "vxperf%s%s: cannot write standard output%s%s\n", command ? " " : "",
                 command ? command : "", error ? ": " : "", error ? std::strerror(error) : "");
    if (rc == 0) rc = 2;
  }
  return rc;
}

int FdStreamBuf::overflow(int c) {
  if (flush_buffer() != 0) return traits_type::eof();
  if (c != traits_type::eof()) {
    *pptr() = static_cast<char>(c);
    pbump(1);
  }
  return c == traits_type::eof() ? traits_type::not_eof(c) : c;
}

int FdStreamBuf::flush_buffer() {
  std::size_t n = static_cast<std::size_t>(pptr() - pbase());
  if (n > 0 && error_ == 0) error_ = write_all(fd_, pbase(), n);
  setp(buf_.data(), buf_.data() + buf_.size());
  return error_ == 0 ? 0 : -1;
}

std::string input_problem(const std::string& path) {
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return "is a directory";
  }
  return {};
}

namespace {

// This executable's folder, with its trailing slash ("" when it cannot be read).
std::string own_dir() {
  std::string dir;
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    dir.assign(self, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/') + 1);
  }
  return dir;
}

// Where exec_torch_helper looks for `helper`, in order.
std::vector<std::string> helper_candidates(const std::string& dir, const char* helper) {
  return {dir + helper, dir + "../libexec/vxperf/" + std::string(helper)};
}

}  // namespace

bool torch_commands_here() {
#if defined(VXPERF_HAVE_TORCH)
  return true;
#elif defined(VXPERF_TORCH_HELPER)
  for (const auto& path : helper_candidates(own_dir(), VXPERF_TORCH_HELPER)) {
    if (::access(path.c_str(), X_OK) == 0) return true;
  }
  return false;
#else
  return false;
#endif
}

int exec_torch_helper(const char* helper, const char* command, int argc, char** argv) {
  const std::string dir = own_dir();
  std::vector<char*> args;
  std::string name = command;
  for (const auto& path : helper_candidates(dir, helper)) {
    if (::access(path.c_str(), X_OK) != 0) continue;
    args.clear();
    args.push_back(const_cast<char*>(path.c_str()));
    args.push_back(name.data());
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    ::execv(path.c_str(), args.data());
    std::fprintf(stderr, "vxperf %s: cannot run %s: %s\n", command, path.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::fprintf(stderr, "vxperf %s: needs LibTorch, whose commands are in %s, not found beside %s\n",
               command, helper, dir.empty() ? "this program" : dir.c_str());
  return 2;
}

std::vector<std::pair<std::string, std::string>> read_partials(
    const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> out;
  // A folder: every file in it (a fleet's partials, too many to name on one command line).
  const auto every_file = [](const std::filesystem::directory_entry&, const std::string&) {
    return true;
  };
  for (const std::string& path :
       files_in_folders(paths, every_file, ": a folder with no partials in it")) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    if (!in || std::filesystem::is_directory(path, ec)) {
      throw std::invalid_argument(path + ": cannot be read as a partial");
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw std::invalid_argument(path + ": cannot be read as a partial");
    out.emplace_back(path, text.str());
  }
  return out;
}

}  // namespace vxperf::cli
