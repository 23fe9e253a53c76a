// The observers an engine tells of its measurement points (vxperf/observer.h), as the hot path
// holds them: a pointer that is null when there are none, so that an engine without observers
// pays one test per point.
//
// Thread safety: a list is immutable once published; the engine keeps every list it published
// alive for its own life, so a pointer read once stays valid.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "schema/event_kinds.h"
#include "vxperf/observer.h"

namespace vxperf::internal {

class ObserverList {
 public:
  explicit ObserverList(std::vector<std::shared_ptr<Observer>> observers)
      : observers_(std::move(observers)) {}

  // Calls fn(observer) on each, in the order they were added; an exception is swallowed (an
  // observer never takes measurement down).
  template <class Fn>
  void each(Fn&& fn) const noexcept {
    for (const auto& o : observers_) {
      try {
        fn(*o);
      } catch (...) {
      }
    }
  }

 private:
  std::vector<std::shared_ptr<Observer>> observers_;
};

// Tells every observer of `list` (a no-op for nullptr, the usual case).
template <class Fn>
inline void notify(const ObserverList* list, Fn&& fn) noexcept {
  if (list != nullptr) list->each(std::forward<Fn>(fn));
}

// Tells every observer of `list` a moment with nothing but its time (a point kind's row): on_point
// by the row's name, then the kind's own hook.
inline void notify_point(const ObserverList* list, EventKind kind, double t,
                         void (Observer::*hook)(double)) noexcept {
  notify(list, [&](Observer& o) {
    o.on_point(event_name(kind), t);
    (o.*hook)(t);
  });
}

}  // namespace vxperf::internal
