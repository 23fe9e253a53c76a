// What the backends share to reach NVIDIA's run-time libraries, which are loaded with dlopen and
// never linked (driver, NVML, NVTX): opening one, resolving an entry point by any of its names,
// and saying a one-line notice where the program wants notices.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace vxperf {

// dlopen(path) (RTLD_NOW | RTLD_LOCAL); nullptr with *error = "cannot load PATH (why)".
inline void* open_library(const std::string& path, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + path + " (" + (why != nullptr ? why : "unknown") + ")";
  }
  return handle;
}

// Resolves `names` in order (the first one exported wins) into `fn`; false when none is, with
// the first name in *missing when given.
template <class Fn>
bool resolve(void* handle, Fn& fn, std::initializer_list<const char*> names,
             std::string* missing = nullptr) {
  for (const char* name : names) {
    if (void* sym = dlsym(handle, name)) {
      fn = reinterpret_cast<Fn>(sym);
      return true;
    }
  }
  if (missing != nullptr) *missing = *names.begin();
  return false;
}

// Hands `line` to `notice`, or writes it to stderr when the program gave none.
inline void say(const std::function<void(std::string_view)>& notice, const std::string& line) {
  if (notice) {
    notice(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

// The one line a backend says when it stands aside: "[Perf] WHO not used: WHY; INSTEAD".
class NotUsed {
 public:
  NotUsed(std::function<void(std::string_view)> notice, const char* who, const char* instead)
      : notice_(std::move(notice)), who_(who), instead_(instead) {}
  void operator()(const std::string& why) const {
    say(notice_, std::string("[Perf] ") + who_ + " not used: " + why + "; " + instead_);
  }

 private:
  std::function<void(std::string_view)> notice_;
  const char* who_;
  const char* instead_;
};

// open_library, saying why through `not_used` when the library cannot be loaded.
inline void* open_library(const std::string& path, const NotUsed& not_used) {
  std::string error;
  void* handle = open_library(path, &error);
  if (handle == nullptr) not_used(error);
  return handle;
}

}  // namespace vxperf
