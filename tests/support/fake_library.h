// A fake of one of NVIDIA's libraries (tests/support/fake_cuda, fake_nvml), opened as the code
// under test opens it, so that both hold the same library, with its control API resolved by name.
#pragma once

#include <dlfcn.h>

namespace vxperf::testing {

class FakeLibrary {
 public:
  explicit FakeLibrary(const char* path)
      : handle(dlopen(path, RTLD_NOW | RTLD_LOCAL)), ok(handle != nullptr) {}
  ~FakeLibrary() {
    if (handle != nullptr) dlclose(handle);
  }
  FakeLibrary(const FakeLibrary&) = delete;
  FakeLibrary& operator=(const FakeLibrary&) = delete;

  void* handle;
  bool ok;  // opened, and every entry point asked for found

 protected:
  // Resolves `name` into `fn`; one that is missing clears `ok`.
  template <class Fn>
  void get(Fn& fn, const char* name) {
    fn = handle == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(handle, name));
    if (fn == nullptr) ok = false;
  }
};

}  // namespace vxperf::testing
