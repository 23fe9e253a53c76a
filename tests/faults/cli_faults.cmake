# The commands under faults (ctest -L faults): output that cannot be written, output files under a
# file size limit, directories, torn and empty files as input, input larger than memory allows.
# Inputs: VXPERF (the CLI), CASES (the conformance cases), WORK (a scratch directory).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(script "${CASES}/training-2-02.events.jsonl")
set(records "${CASES}/inference-1-00.expected.jsonl")

# expect(RC REGEX COMMAND...): run COMMAND, require exit status RC (or any nonzero for "nonzero")
# and REGEX in its stderr, which is then one line.
function(expect rc regex)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc STREQUAL "nonzero")
    if(got EQUAL 0)
      message(FATAL_ERROR "${ARGN}: exit 0, expected a failure\n${err}")
    endif()
  elseif(NOT got EQUAL rc)
    message(FATAL_ERROR "${ARGN}: exit ${got}, expected ${rc}\n${out}${err}")
  endif()
  if(NOT "${err}" MATCHES "${regex}")
    message(FATAL_ERROR "${ARGN}: stderr does not match '${regex}':\n${err}")
  endif()
endfunction()

# 6. Standard output on a full device: every command fails and says why.
function(expect_full_stdout)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE got OUTPUT_FILE /dev/full ERROR_VARIABLE err)
  if(got EQUAL 0 OR NOT err MATCHES "cannot write standard output: No space left on device")
    message(FATAL_ERROR "${ARGN} > /dev/full: exit ${got}, stderr:\n${err}")
  endif()
endfunction()
expect_full_stdout("${VXPERF}" report "${records}")
expect_full_stdout("${VXPERF}" report --json "${records}")
expect_full_stdout("${VXPERF}" trace "${script}")
expect_full_stdout("${VXPERF}" replay "${script}")
expect_full_stdout("${VXPERF}" flops --preset wan2.1-t2v-1.3b --size 832x480 --json)
expect_full_stdout("${VXPERF}" report --help)
expect_full_stdout("${VXPERF}" --version)

# 6. Output files under a file size limit (SIGXFSZ ignored, so write(2) fails with EFBIG): the
# command fails, the older file is left as it was, no temporary file is left behind.
function(expect_limited_output out)
  file(WRITE "${out}" "older\n")
  execute_process(COMMAND sh -c "ulimit -f 1 && trap '' XFSZ && exec \"$@\"" sh ${ARGN}
                  RESULT_VARIABLE got OUTPUT_QUIET ERROR_VARIABLE err)
  file(READ "${out}" kept)
  file(GLOB leftovers "${out}.tmp*")
  if(got EQUAL 0 OR NOT err MATCHES "cannot write ${out}: File too large" OR
     NOT kept STREQUAL "older\n" OR leftovers)
    message(FATAL_ERROR "${ARGN}: exit ${got}, '${kept}', left ${leftovers}, stderr:\n${err}")
  endif()
endfunction()
expect_limited_output("${WORK}/trace.json" "${VXPERF}" trace "${script}" -o "${WORK}/trace.json")
expect_limited_output("${WORK}/report.html" "${VXPERF}" report --html "${WORK}/report.html"
                      "${CASES}/training-2-02.expected.jsonl")
# Without the limit the same commands write whole files.
expect(0 "wrote [0-9]+ events" "${VXPERF}" trace "${script}" -o "${WORK}/trace.json")
file(READ "${WORK}/trace.json" trace)
if(NOT trace MATCHES "^{\"traceEvents\".*}\n$")
  message(FATAL_ERROR "trace.json is not whole")
endif()

# 7. A directory as input is said to be one, by every command.
# report takes a folder's records files; one with none is refused
expect(2 "a folder with no records files" "${VXPERF}" report "${WORK}")
expect(2 "is a directory" "${VXPERF}" replay "${WORK}")
expect(2 "is a directory" "${VXPERF}" trace "${WORK}")

# 7. A torn last line (no newline): skipped with a warning by report, replay and trace alike; the
# same line completed by a newline: an error naming the file and line.
file(READ "${script}" text)
string(LENGTH "${text}" length)
math(EXPR cut "${length} - 40")
string(SUBSTRING "${text}" 0 ${cut} torn)
file(WRITE "${WORK}/torn.events.jsonl" "${torn}")
file(WRITE "${WORK}/bad.events.jsonl" "${torn}\n")
string(REGEX MATCHALL "\n" newlines "${torn}")
list(LENGTH newlines last)
math(EXPR last "${last} + 1")
expect(0 "torn.events.jsonl: line ${last}: torn last line skipped" "${VXPERF}" replay
       "${WORK}/torn.events.jsonl")
expect(0 "torn.events.jsonl: line ${last}: torn last line skipped" "${VXPERF}" trace
       "${WORK}/torn.events.jsonl" -o "${WORK}/torn.json")
expect(2 "bad.events.jsonl: line ${last}: not a JSON object" "${VXPERF}" replay
       "${WORK}/bad.events.jsonl")
expect(2 "bad.events.jsonl: line ${last}: not a JSON object" "${VXPERF}" trace
       "${WORK}/bad.events.jsonl")
file(READ "${records}" text)
string(LENGTH "${text}" length)
math(EXPR cut "${length} - 40")
string(SUBSTRING "${text}" 0 ${cut} torn)
file(WRITE "${WORK}/torn.jsonl" "${torn}")
file(WRITE "${WORK}/bad.jsonl" "${torn}\n")
expect(0 "torn.jsonl:[0-9]+: torn last line skipped" "${VXPERF}" report "${WORK}/torn.jsonl")
expect(2 "bad.jsonl:[0-9]+: not valid JSON" "${VXPERF}" report --strict "${WORK}/bad.jsonl")
expect(0 "bad.jsonl:[0-9]+: not valid JSON \\(line skipped\\)" "${VXPERF}" report
       "${WORK}/bad.jsonl")

# 7. Empty input: an error for trace as for replay.
file(WRITE "${WORK}/empty.events.jsonl" "")
expect(2 "empty" "${VXPERF}" replay "${WORK}/empty.events.jsonl")
expect(2 "empty" "${VXPERF}" trace "${WORK}/empty.events.jsonl")

# 7. A negative byte count is rejected, not wrapped to 2^64.
file(READ "${CASES}/inference-1-00.events.jsonl" text)
file(WRITE "${WORK}/negative.events.jsonl"
     "${text}{\"ev\": \"memory\", \"peak_alloc_bytes\": -1, \"peak_reserved_bytes\": 0}\n")
expect(2 "must not be negative" "${VXPERF}" replay "${WORK}/negative.events.jsonl")
expect(2 "must not be negative" "${VXPERF}" trace "${WORK}/negative.events.jsonl")

# 8. Input larger than the memory the command may use (ulimit -v): a clear error, exit 2, never
# an uncaught std::bad_alloc. One line of 150 MB, and 100,000 records.
execute_process(COMMAND sh -c "head -c 150000000 /dev/zero | tr '\\\\0' x > '${WORK}/huge-line.jsonl'")
execute_process(COMMAND sh -c "yes \"$(head -n 1 '${records}')\" | head -n 100000 > '${WORK}/many.jsonl'")
# The limits are counted from the least address space the command starts in (a build linked with
# LibTorch maps far more than one without), found by halving.
set(low 0)
set(high 8000000)
while(high GREATER low)
  math(EXPR mid "(${low} + ${high}) / 2")
  # Bounded: LibTorch can hang at start when the limit is just too tight.
  execute_process(COMMAND sh -c "ulimit -v ${mid} && exec \"$0\" --version" "${VXPERF}"
                  RESULT_VARIABLE ran OUTPUT_QUIET ERROR_QUIET TIMEOUT 10)
  if(ran EQUAL 0)
    set(high ${mid})
  else()
    math(EXPR low "${mid} + 1")
  endif()
endwhile()
# Some room above the least, so that starting never hangs, and less than the inputs need: the
# 150 MB line, the 100,000 records.
# (Near the least, LibTorch's start is erratic: the margin is raised until it starts every time.)
set(margin 0)
foreach(try RANGE 5)
  set(starts TRUE)
  foreach(extra 40000 100000)
    math(EXPR limit "${high} + ${margin} + ${extra}")
    foreach(again 1 2 3)
      execute_process(COMMAND sh -c "ulimit -v ${limit} && exec \"$0\" --version" "${VXPERF}"
                      RESULT_VARIABLE ran OUTPUT_QUIET ERROR_QUIET TIMEOUT 10)
      if(NOT ran EQUAL 0)
        set(starts FALSE)
      endif()
    endforeach()
  endforeach()
  if(starts)
    break()
  endif()
  math(EXPR margin "${margin} + 50000")
endforeach()
math(EXPR oom_limit "${high} + ${margin} + 100000")
math(EXPR many_limit "${high} + ${margin} + 40000")
function(expect_out_of_memory regex)
  execute_process(COMMAND sh -c "ulimit -v ${oom_limit} && exec \"$@\"" sh ${ARGN}
                  RESULT_VARIABLE got OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 120)
  if(NOT got EQUAL 2 OR NOT err MATCHES "${regex}")
    message(FATAL_ERROR "${ARGN} under ulimit -v: exit ${got}, stderr:\n${err}")
  endif()
endfunction()
expect_out_of_memory("huge-line.jsonl:1: out of memory after 0 records" "${VXPERF}" report
                     "${WORK}/huge-line.jsonl")
expect_out_of_memory("vxperf trace: out of memory" "${VXPERF}" trace "${WORK}/huge-line.jsonl")
expect_out_of_memory("vxperf replay: out of memory" "${VXPERF}" replay "${WORK}/huge-line.jsonl")
# The report streams: 100,000 records fit in the room that once ran out (it held every record).
execute_process(COMMAND sh -c "ulimit -v ${many_limit} && exec \"$@\"" sh "${VXPERF}" report
                "${WORK}/many.jsonl" RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 120)
if(NOT got EQUAL 0 OR NOT out MATCHES "(Requests|Training): ")
  message(FATAL_ERROR "report of 100,000 records under ulimit -v: exit ${got}, stderr:\n${err}")
endif()
# --html streams too: its charts keep a few numbers a record, not the records, so the page of
# 100,000 records is written in the same room.
execute_process(COMMAND sh -c "ulimit -v ${many_limit} && exec \"$@\"" sh "${VXPERF}" report
                --html "${WORK}/many.html" "${WORK}/many.jsonl" RESULT_VARIABLE got OUTPUT_QUIET
                ERROR_VARIABLE err TIMEOUT 120)
if(NOT got EQUAL 0 OR NOT EXISTS "${WORK}/many.html")
  message(FATAL_ERROR "report --html of 100,000 records under ulimit -v: exit ${got}, stderr:\n${err}")
endif()
file(READ "${WORK}/many.html" many_html LIMIT 100000)
if(NOT many_html MATCHES "<h2>Summary</h2>")
  message(FATAL_ERROR "report --html of 100,000 records wrote no page")
endif()
file(REMOVE "${WORK}/huge-line.jsonl" "${WORK}/many.jsonl" "${WORK}/many.html")
