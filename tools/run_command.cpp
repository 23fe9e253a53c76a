#include <glob.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kRunCommand = {
    "run", run,
    "usage: vxperf run [--level N] [--] PROGRAM [ARGS...]\n\n"
    "Runs PROGRAM (python serve.py, torchrun ... train.py, accelerate launch ...) measured "
    "without\n"
    "changing it: every Python process it starts, launchers' workers included, calls\n"
    "vxperf.install() once it imports diffusers and vxperf.install_training() once it imports\n"
    "accelerate. PROGRAM's arguments, output and exit status are its own.\n\n"
    "  --level N   VIDEOX_PERF for the program (default: VIDEOX_PERF as set, else 1)\n\n"
    "The other VIDEOX_PERF* variables are read as usual (VIDEOX_PERF_JSON for records, say).\n"
    "Works through PYTHONPATH: a sitecustomize.py of the vxperf package leads it, and runs the\n"
    "one it shadows. The package is looked for beside this command (pip), in the build tree, or\n"
    "in the site-packages of the prefix it was installed in (CMake).\n",
    "run a program (python, torchrun, accelerate launch) measured without changing it", kOwnHelp};

namespace {

// The folder of the package's sitecustomize.py: beside the command inside a pip-installed package
// (vxperf/_bin/vxperf), in the build tree's python/ (build/vxperf), or in the site-packages of the
// prefix a CMake install put the command in (PREFIX/bin/vxperf).
std::string bootstrap_dir() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  std::string dir(self, static_cast<std::size_t>(n));
  dir.erase(dir.rfind('/') + 1);
  std::vector<std::string> candidates = {dir + "../_bootstrap/sitecustomize.py",
                                         dir + "python/vxperf/_bootstrap/sitecustomize.py"};
  glob_t found{};
  const std::string pattern = dir + "../lib/python3*/*-packages/vxperf/_bootstrap/sitecustomize.py";
  if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) candidates.emplace_back(found.gl_pathv[i]);
  }
  ::globfree(&found);
  for (const std::string& candidate : candidates) {
    char real[PATH_MAX];
    if (::realpath(candidate.c_str(), real) != nullptr) {
      std::string path(real);
      return path.substr(0, path.rfind('/'));
    }
  }
  return {};
}

std::string joined_path(const std::string& first, const char* rest, const std::string& last) {
  std::string out = first;
  if (rest != nullptr && *rest != '\0') out += std::string(":") + rest;
  return out + ":" + last;
}

int run(int argc, char** argv) {
  int i = 1;
  std::string level;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--help" || arg == "-h") {
      print(kRunCommand.usage);
      return 0;
    }
    if (arg == "--level" && i + 1 < argc) {
      level = argv[++i];
      char* end = nullptr;
      long value = std::strtol(level.c_str(), &end, 10);
      if (level.empty() || *end != '\0' || value < 0 || value > 2) {
        std::fprintf(stderr, "vxperf run: --level takes 0, 1 or 2, not '%s'\n", level.c_str());
        return 2;
      }
      continue;
    }
    if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "vxperf run: unknown option %s (try --help)\n", arg.c_str());
      return 2;
    }
    break;
  }
  if (i >= argc) {
    std::fprintf(stderr, "vxperf run: which program? (vxperf run -- python serve.py)\n");
    return 2;
  }
  std::string bootstrap = bootstrap_dir();
  if (bootstrap.empty()) {
    std::fprintf(stderr,
                 "vxperf run: the vxperf Python package is not beside this command (a pip install "
                 "puts it there); the program is not run\n");
    return 2;
  }
  // The package's folder goes last: a vxperf the program's own path holds comes first.
  std::string package_parent = bootstrap.substr(0, bootstrap.rfind('/'));
  package_parent = package_parent.substr(0, package_parent.rfind('/'));
  std::string path = joined_path(bootstrap, std::getenv("PYTHONPATH"), package_parent);
  const char* set_level = std::getenv("VIDEOX_PERF");
  if (!level.empty()) {
    ::setenv("VIDEOX_PERF", level.c_str(), 1);
  } else if (set_level == nullptr || *set_level == '\0') {
    ::setenv("VIDEOX_PERF", "1", 1);
  }
  ::setenv("PYTHONPATH", path.c_str(), 1);
  ::setenv("VXPERF_RUN", "1", 1);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execvp(argv[i], argv + i);
  std::fprintf(stderr, "vxperf run: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

}  // namespace
}  // namespace vxperf::cli
