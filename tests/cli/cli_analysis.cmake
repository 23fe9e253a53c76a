# Runs the report, trace and flops commands and checks exit statuses and outputs.
file(MAKE_DIRECTORY "${WORK}")

# expect(RC REGEX [ARGS...]): run vxperf ARGS, require exit status RC and REGEX in its output.
function(expect rc regex)
  execute_process(COMMAND "${VXPERF}" ${ARGN} RESULT_VARIABLE got OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT got EQUAL rc)
    message(FATAL_ERROR "vxperf ${ARGN}: exit ${got}, expected ${rc}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "vxperf ${ARGN}: output does not match '${regex}':\n${out}${err}")
  endif()
  if(NOT rc EQUAL 0)
    # Errors are one line.
    string(STRIP "${err}" stripped)
    string(FIND "${stripped}" "\n" newline)
    if(NOT newline EQUAL -1)
      message(FATAL_ERROR "vxperf ${ARGN}: error is more than one line:\n${err}")
    endif()
  endif()
endfunction()

foreach(cmd report trace flops)
  expect(0 "usage: vxperf ${cmd}" ${cmd} --help)
endforeach()
expect(0 "report" --help)

# flops: the issue's check values.
expect(0 "\"tokens\": 75600" flops --preset wan2.1-t2v-14b --size 1280x720 --frames 81 --json)
expect(0 "\"params\": 14288491584" flops --preset wan2.1-t2v-14b --size 1280x720 --json)
expect(0 "\"tokens\": 32760" flops --preset wan2.1-t2v-1.3b --size 832x480 --frames 81 --json)
expect(0 "\"flops_per_forward\": 29387975" flops --preset wan2.1-t2v-1.3b --size 832x480 --json)
expect(0 "\"params\": 1418996800" flops --dim 1536 --ffn 8960 --heads 12 --layers 30
       --size 832x480 --json)
expect(0 "ideal" flops --preset wan2.1-t2v-1.3b --size 832x480 --device H100 --mfu 0.4)
# The peak per dtype, density and skipped forwards.
expect(0 "at 1979.0 TFLOPS fp8 x 1 device" flops --preset wan2.1-t2v-1.3b --size 832x480
       --device H100 --dtype fp8)
expect(2 "has no fp8 peak in the table" flops --preset wan2.1-t2v-1.3b --size 832x480
       --device A100 --dtype fp8)
expect(2 "--dtype takes" flops --preset wan2.1-t2v-1.3b --size 832x480 --dtype int4)
expect(0 "self-attention density 0.5" flops --preset wan2.1-t2v-1.3b --size 832x480 --density 0.5)
expect(0 "25% skipped: 75 computed" flops --preset wan2.1-t2v-1.3b --size 832x480
       --skip-ratio 0.25)
expect(0 "\"computed_forwards\": 75.0" flops --preset wan2.1-t2v-1.3b --size 832x480
       --skip-ratio 0.25 --json)
expect(2 "--skip-ratio takes" flops --preset wan2.1-t2v-1.3b --size 832x480 --skip-ratio 1)
expect(2 "--density takes" flops --preset wan2.1-t2v-1.3b --size 832x480 --density 0)
expect(2 "unknown preset" flops --preset nope --size 832x480)
expect(2 "missing --size" flops --preset wan2.1-t2v-1.3b)
expect(2 "--frames takes" flops --preset wan2.1-t2v-1.3b --size 832x480 --frames x)
expect(2 "--size takes WxH" flops --preset wan2.1-t2v-1.3b --size 832)
expect(2 "--preset NAME or all of" flops --dim 1536 --size 832x480)
expect(2 "gives no tokens" flops --preset wan2.1-t2v-1.3b --size 8x8 --frames 1)

# report
expect(0 "Requests: 2 measured" report "${CASES}/inference-1-00.expected.jsonl")
expect(0 "Training: .* steps" report "${CASES}/training-2-02.expected.jsonl")
expect(0 "\"stragglers\": \\[" report --json "${CASES}/training-1-00.expected.jsonl"
       "${CASES}/training-2-00.expected.jsonl")
expect(0 "Stragglers:" report "${CASES}/training-1-00.expected.jsonl"
       "${CASES}/training-2-00.expected.jsonl")
expect(0 "training.step_p50_s.*(better|worse|same)" report --compare
       "${CASES}/training-2-02.expected.jsonl" "${CASES}/training-2-03.expected.jsonl")
expect(0 "\"direction\"" report --json --compare
       "${CASES}/training-2-02.expected.jsonl" "${CASES}/training-2-03.expected.jsonl")
file(READ "${CASES}/inference-1-00.expected.jsonl" records)
string(SUBSTRING "${records}" 0 1500 torn)
file(WRITE "${WORK}/torn.jsonl" "${torn}")
expect(0 "torn last line" report "${WORK}/torn.jsonl")
file(WRITE "${WORK}/bad.jsonl" "${torn}\n${records}")
expect(2 "bad.jsonl:[0-9]+: not valid JSON" report --strict "${WORK}/bad.jsonl")
# Without --strict a bad line in the middle is said once, with its line (on stderr, after the
# report), and the rest is read.
expect(0 "Requests: [0-9]+ measured.*bad.jsonl:[0-9]+: not valid JSON \\(line skipped\\)" report
       "${WORK}/bad.jsonl")
# Another tool's JSON: said once per file with the first line and a count; alone, an error.
file(WRITE "${WORK}/foreign.jsonl" "{\"level\": \"info\", \"msg\": \"up\"}\n[1, 2]\n{\"kind\": \"x\"}\n")
expect(0 "Requests: 2 measured.*foreign.jsonl:1: a record needs a string \"kind\" \\(line skipped\\).*foreign.jsonl: 2 more lines skipped as not records \\(the last at line 3\\)"
       report "${WORK}/foreign.jsonl" "${CASES}/inference-1-00.expected.jsonl")
expect(2 "foreign.jsonl:1: a record needs a string \"kind\"" report "${WORK}/foreign.jsonl")
# Timestamps going backwards: said once, read as they are.
file(WRITE "${WORK}/backwards.jsonl"
     "{\"kind\": \"request\", \"ts\": 5, \"e2e_s\": 1, \"stages\": {}}\n"
     "{\"kind\": \"request\", \"ts\": 4, \"e2e_s\": 2, \"stages\": {}}\n"
     "{\"kind\": \"request\", \"ts\": 3, \"e2e_s\": 3, \"stages\": {}}\n")
expect(0 "Requests: 3 measured.*backwards.jsonl:2: \"ts\" 4 of rank 0 is before the previous record's 5.*backwards.jsonl: 1 more records whose ts goes backwards \\(the last at line 3\\)"
       report "${WORK}/backwards.jsonl")
expect(2 "cannot open" report "${WORK}/missing.jsonl")
# The threads that parse change nothing of what is said.
foreach(threads 1 3)
  expect(0 "Stragglers:" report --threads ${threads} "${CASES}/training-1-00.expected.jsonl"
         "${CASES}/training-1-01.expected.jsonl")
endforeach()
expect(2 "--threads takes a whole number from 1 to 64" report --threads 0 x.jsonl)
expect(2 "missing FILE" report)
expect(2 "unknown option" report --frobnicate x.jsonl)
expect(2 "--compare needs two files" report --compare a.jsonl)
expect(0 "Requests.*vxperf report: wrote .*report.html" report --html "${WORK}/report.html"
       "${CASES}/inference-2-00.expected.jsonl" "${CASES}/training-2-02.expected.jsonl")
file(READ "${WORK}/report.html" html)
if(NOT html MATCHES "<svg")
  message(FATAL_ERROR "report.html has no chart")
endif()
# The page with the transformer calls of a level-2 log, and the comparison as a page.
expect(0 "Requests" report --html "${WORK}/steps.html" "${CASES}/inference-2-01.expected.jsonl"
       --steps "${CASES}/inference-2-01.expected.log" --steps "${CASES}/inference-2-01.events.jsonl")
file(READ "${WORK}/steps.html" html)
if(NOT html MATCHES "Transformer calls in order: time of each")
  message(FATAL_ERROR "steps.html has no chart of the transformer calls")
endif()
expect(0 "warning: .*inference-1-00.expected.jsonl: no transformer calls" report --html
       "${WORK}/nosteps.html" "${CASES}/inference-2-01.expected.jsonl"
       --steps "${CASES}/inference-1-00.expected.jsonl")
expect(2 "--steps goes with --html" report "${CASES}/inference-2-01.expected.jsonl"
       --steps "${CASES}/inference-2-01.expected.log")
expect(0 "training.step_p50_s" report --compare "${CASES}/training-2-02.expected.jsonl"
       "${CASES}/training-2-03.expected.jsonl" --html "${WORK}/compare.html")
file(READ "${WORK}/compare.html" html)
if(NOT html MATCHES "Change from A to B" OR NOT html MATCHES "<td>training.step_p50_s</td>")
  message(FATAL_ERROR "compare.html has no comparison")
endif()
expect(2 "cannot write" report --compare "${CASES}/training-2-02.expected.jsonl"
       "${CASES}/training-2-03.expected.jsonl" --html "${WORK}/no/such/dir/compare.html")

# trace
expect(0 "wrote [0-9]+ events" trace "${CASES}/training-2-02.events.jsonl" -o "${WORK}/trace.json")
file(READ "${WORK}/trace.json" trace)
if(NOT trace MATCHES "\"traceEvents\"" OR NOT trace MATCHES "\"ph\":\"X\"")
  message(FATAL_ERROR "trace.json is not a trace-event file")
endif()
expect(0 "\"traceEvents\"" trace "${CASES}/inference-2-01.events.jsonl")
file(WRITE "${WORK}/bad.events.jsonl" "{\"ev\": \"config\", \"env\": {}}\n{\"ev\": \"stage\"}\n")
expect(2 "bad.events.jsonl: line 2:" trace "${WORK}/bad.events.jsonl" -o "${WORK}/x.json")
expect(2 "missing SCRIPT" trace)
expect(2 "-o needs a value" trace "${CASES}/training-2-02.events.jsonl" -o)

expect(2 "unknown command" frobnicate)

# The wrong kind of file is said with the command that reads it; a folder is its records files
# (a trace and an event script beside them, and hidden files, left out); a mistyped command or
# option gets the nearest one.
file(WRITE "${WORK}/profile.json" "{\"schemaVersion\": 1, \"traceEvents\": []}\n")
expect(2 "profile.json is a PyTorch profiler trace: 'vxperf explain' reads it" report
       "${WORK}/profile.json")
expect(2 "is an event script \\(VIDEOX_PERF_TRACE\\): 'vxperf replay' re-aggregates it" report
       "${CASES}/training-2-02.events.jsonl")
expect(2 "inference-1-00.expected.jsonl is a records file \\(VIDEOX_PERF_JSON\\): 'vxperf report' reads it"
       explain "${CASES}/inference-1-00.expected.jsonl")
expect(2 "is an event script \\(VIDEOX_PERF_TRACE\\): 'vxperf replay' re-aggregates it" explain
       "${CASES}/training-2-02.events.jsonl")
# A CPU-only profile is said once, in the text or (beside JSON) on standard error.
file(MAKE_DIRECTORY "${WORK}/cpu")
file(WRITE "${WORK}/cpu/cpu.json" "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [
{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"request 0\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 500},
{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 50}]}
")
foreach(form text json)
  set(flag "")
  if(form STREQUAL "json")
    set(flag "--json")
  endif()
  execute_process(COMMAND "${VXPERF}" explain "${WORK}/cpu/cpu.json" ${flag} RESULT_VARIABLE got
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "CPU-only" said "${out}${err}")
  list(LENGTH said times)
  if(NOT got EQUAL 0 OR NOT times EQUAL 1)
    message(FATAL_ERROR "explain ${flag}: exit ${got}, CPU-only said ${times} times:\n${out}${err}")
  endif()
endforeach()
# The page is named as report's is; one that cannot be written is exit status 2, as for report.
expect(0 "vxperf explain: wrote .*cpu.html" explain "${WORK}/cpu/cpu.json" --html
       "${WORK}/cpu.html")
if(NOT EXISTS "${WORK}/cpu.html")
  message(FATAL_ERROR "explain --html wrote no page")
endif()
expect(2 "vxperf explain: cannot write .*no/such/dir/cpu.html" explain "${WORK}/cpu/cpu.json"
       --html "${WORK}/no/such/dir/cpu.html")
expect(2 "vxperf explain: cannot write .*no/such/dir/cpu.partial.json" explain
       "${WORK}/cpu/cpu.json" --partial "${WORK}/no/such/dir/cpu.partial.json")
# Edits joined by commas are one what-if: one that does not apply is said of the whole.
expect(0 "comm,host +does not apply: host: a CPU-only profile" explain "${WORK}/cpu/cpu.json"
       --what-if=comm,host)
expect(2 "--what-if host,hosts: one of host, comm" explain "${WORK}/cpu/cpu.json"
       --what-if=host,hosts)
expect(2 "--what-if comm,comm: comm is named twice" explain "${WORK}/cpu/cpu.json"
       --what-if=comm,comm)
file(MAKE_DIRECTORY "${WORK}/run")
file(COPY "${CASES}/inference-1-00.expected.jsonl" "${CASES}/inference-1-00.events.jsonl"
     DESTINATION "${WORK}/run")
file(WRITE "${WORK}/run/.perf.jsonl.checkpoints" "{\"checkpoint\": \"/x\", \"step\": 1}\n")
expect(0 "Requests: 2 measured" report "${WORK}/run")
expect(2 "unknown command 'reprot' \\(did you mean 'report'\\?\\)" reprot)
expect(2 "unknown option '--jsno' \\(did you mean --json\\?\\)" report --jsno
       "${CASES}/inference-1-00.expected.jsonl")
