// A rank's ledger across the attempts of a restarted job, as `vxperf report` stitches it: windows
// are grouped by the attempt their records say (torchrun's restart count, VIDEOX_PERF_RUN_ID),
// each attempt's ledger is its final record's (train_end: through the training's end) or else its
// latest window's, and one attempt's end and the next's start are placed on the wall clock by
// their records' times. The steps a later attempt ran again (its
// first step below the earlier one's last) are the earlier one's lost progress; the time between
// attempts is a part of its own; the parts still add up to the wall time exactly.
//
// Thread safety: none; one report builder's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vxperf/records.h"

namespace vxperf::analysis {

class AttemptLedgers {
 public:
  void add(const TrainWindowRecord& record);
  // The attempt's final record: its ledger runs to the attempt's end.
  void add(const TrainEndRecord& record);
  // The rank's ledger: its one attempt's latest, or its attempts stitched (nullopt: no window had
  // a ledger). What could not be stitched cleanly is said in `warnings`, once each.
  std::optional<Ledger> ledger(int rank, std::vector<std::string>* warnings) const;
  // The steps its attempts ran, those run again included (the stitched ledger's `steps` leaves
  // them out).
  std::int64_t steps_run() const;
  // From its first attempt's start to its last attempt's end on the records' wall clock; nullopt
  // without a ledger or where a record carried no time.
  std::optional<std::pair<double, double>> span() const;
  // Its bytes in a report partial (analysis/partial_io.h).
  template <class IO>
  void fields(IO& io) {
    io(attempts_, untimed_);
  }

 private:
  // A window's place in its attempt: its steps and the attempt's step time through it.
  struct Mark {
    std::int64_t step_first = 0, step_last = 0;
    double compute_s = 0, data_s = 0;  // cumulative: the ledger's step parts at this window
    template <class IO>
    void fields(IO& io) {
      io(step_first, step_last, compute_s, data_s);
    }
  };
  struct Attempt {
    double first_ts = 0, start = 0;  // the earliest record's time, less its ledger's wall
    double latest_ts = 0;
    Ledger ledger;                 // its final record's, else its latest window's
    bool ended = false;            // a final record was read
    std::int64_t first_step = -1;  // the lowest step its records begin at
    int world_size = 1;
    // Its windows' marks: the latest kExactMarks of them each a window's, the earlier ones made
    // pairs, and pairs of pairs, as more come (compact), so that where a later attempt resumed
    // inside them its lost progress is the part of the pair's parts its steps are (at most
    // 2 x kExactMarks marks, whatever the windows).
    std::vector<Mark> marks;
    // The window read last and whether a later window's time went back before it (the wall
    // clock was set back).
    std::int64_t last_first = -1;
    double last_ts = 0;
    bool clock_back = false;
    template <class IO>
    void fields(IO& io) {
      static_assert(std::is_trivially_copyable_v<Ledger>);  // written as its bytes, sized
      io(first_ts, start, latest_ts, ledger, ended, first_step, world_size, marks, last_first,
         last_ts, clock_back);
    }
  };
  static constexpr std::size_t kExactMarks = 64;
  static void compact(std::vector<Mark>& marks);
  // A record's time and ledger into its attempt (`fresh`: its first record; `end`: a final
  // record).
  void place(Attempt& a, bool fresh, double ts, const Ledger& l, int world_size, bool end);
  std::map<std::pair<std::string, std::int64_t>, Attempt> attempts_;
  bool untimed_ = false;  // a record without its time (ts 0)
};

}  // namespace vxperf::analysis
