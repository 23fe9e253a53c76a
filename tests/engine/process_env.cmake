# End-to-end checks of the process-wide engine, driven by the environment like a real job.
# Inputs: EXAMPLE (the instrumented program), VXPERF (the CLI), WORK (a scratch directory).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run_example out err)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VIDEOX_PERF --unset=RANK
                          --unset=WORLD_SIZE ${ARGN} "${EXAMPLE}"
                  OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "example exited ${rc}: ${e}")
  endif()
  set(${out} "${o}" PARENT_SCOPE)
  set(${err} "${e}" PARENT_SCOPE)
endfunction()

function(expect_count text pattern count what)
  string(REGEX MATCHALL "${pattern}" found "${text}")
  list(LENGTH found n)
  if(NOT n EQUAL count)
    message(FATAL_ERROR "${what}: expected ${count} matches of '${pattern}', got ${n} in:\n${text}")
  endif()
endfunction()

# Off: nothing printed, nothing written.
run_example(out err VIDEOX_PERF_JSON=${WORK}/off/records.jsonl VIDEOX_PERF_TRACE=${WORK}/off/t.jsonl)
if(NOT err STREQUAL "" OR EXISTS "${WORK}/off")
  message(FATAL_ERROR "metrics off still produced output: '${err}'")
endif()

# On, with a bad value reported once and a records file in a directory that does not exist yet.
run_example(out err VIDEOX_PERF=1 VIDEOX_PERF_WARMUP=two VIDEOX_PERF_EVERY=2
            VIDEOX_PERF_JSON=${WORK}/on/nested/records.jsonl VIDEOX_PERF_TRACE=${WORK}/on/trace.jsonl)
expect_count("${err}" "VIDEOX_PERF_WARMUP=\"two\" is not an integer" 1 "bad value")
expect_count("${err}" "\\[Perf\\]\\[rank0\\] req#" 3 "request lines")
expect_count("${err}" "\\[Perf\\]\\[rank0\\] step " 3 "window lines")
expect_count("${err}" "=== 3 reqs" 1 "inference summary")
expect_count("${err}" "=== 5 steps" 1 "training summary")
file(STRINGS "${WORK}/on/nested/records.jsonl" records)
list(LENGTH records n)
if(NOT n EQUAL 7)
  message(FATAL_ERROR "expected 7 records (3 requests, 3 windows, the training's end), got ${n}")
endif()
expect_count("${records}" "\"kind\":\"train_end\"" 1 "the training's final record")
# The run's trace replays to the same number of records.
execute_process(COMMAND "${VXPERF}" replay "${WORK}/on/trace.jsonl"
                OUTPUT_VARIABLE replayed ERROR_VARIABLE replay_log RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "replay of the live trace failed: ${replay_log}")
endif()
expect_count("${replayed}" "\"kind\":\"request\"" 3 "replayed requests")
expect_count("${replayed}" "\"kind\":\"train_window\"" 3 "replayed windows")
expect_count("${replayed}" "\"kind\":\"train_end\"" 1 "the replayed final record")

# The start notice says where records go, and how to get them when nowhere (each pattern
# short of the notice's `;`, which would split a match into two list items).
expect_count("${err}" "records to ${WORK}/on/nested/records.jsonl" 1 "the notice's records file")
run_example(out err --unset=VIDEOX_PERF_JSON VIDEOX_PERF=1)
expect_count("${err}" "no records file \\(VIDEOX_PERF_JSON=PATH writes one for vxperf report\\)" 1
             "the notice without a records file")

# Rank 1 of 2: records in its own file, no log lines (rank 0 logs).
run_example(out err VIDEOX_PERF=1 RANK=1 WORLD_SIZE=2 VIDEOX_PERF_JSON=${WORK}/ranks/records.jsonl)
expect_count("${err}" "\\[Perf\\]" 0 "rank 1 log lines")
if(NOT EXISTS "${WORK}/ranks/records.jsonl.rank1")
  message(FATAL_ERROR "rank 1 wrote no records.jsonl.rank1")
endif()

# A records path that cannot be written: reported once, the run goes on and still logs.
run_example(out err VIDEOX_PERF=1 VIDEOX_PERF_JSON=/proc/vxperf-no/records.jsonl)
expect_count("${err}" "cannot write records" 1 "unwritable path")
expect_count("${err}" "\\[Perf\\]\\[rank0\\] req#" 3 "request lines with an unwritable path")

# Configured in code: on without VIDEOX_PERF, records where the program says, every record also
# handed to its sink (a failed request included, and said so), a second configure ignored.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VIDEOX_PERF --unset=VIDEOX_PERF_JSON
                        "${CONFIGURED}" "${WORK}/configured/records.jsonl"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure_example exited ${rc}: ${err}")
endif()
expect_count("${out}" "configure 1 0, engine on" 1 "configure before and after the engine")
expect_count("${out}" "sink saw 3 requests \\(1 failed\\), 2 windows" 1 "the in-process sink")
expect_count("${err}" "\\[Perf\\]\\[rank0\\] req#" 3 "request lines of the configured run")
file(STRINGS "${WORK}/configured/records.jsonl" records)
list(LENGTH records n)
if(NOT n EQUAL 6)
  message(FATAL_ERROR "expected 6 records from the configured run (5 and the training's end), "
                      "got ${n}")
endif()
# The environment still wins over the program's own settings: here the records path, and the
# level (VIDEOX_PERF=0 in the environment does not turn off a level given in code).
execute_process(COMMAND ${CMAKE_COMMAND} -E env VIDEOX_PERF=0
                        VIDEOX_PERF_JSON=${WORK}/configured/from-env.jsonl
                        "${CONFIGURED}" "${WORK}/configured/from-code.jsonl"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS "${WORK}/configured/from-env.jsonl"
   OR EXISTS "${WORK}/configured/from-code.jsonl")
  message(FATAL_ERROR "VIDEOX_PERF_JSON did not win over the configured path: ${out} ${err}")
endif()
