# Runs `vxperf demo` tiny twice (metrics on, then off) and checks that the output digests agree
# and that the metrics run wrote a non-empty records file.
set(args --size 32x32 --frames 5 --steps 2 --requests 1 --train-steps 2 --accum 2 --dim 32
         --layers 1 --heads 2 --ffn 64 --text-len 8)
file(REMOVE_RECURSE ${OUT})
foreach(mode on off)
  set(extra --out ${OUT}/${mode})
  if(mode STREQUAL "off")
    list(APPEND extra --no-metrics)
  endif()
  # The measured peak goes to a cache of the test's own, never the user's.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VIDEOX_PERF --unset=VIDEOX_PERF_PEAK_TFLOPS
                          XDG_CACHE_HOME=${OUT}/cache ${VXPERF} demo ${args} ${extra}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out_${mode} ERROR_VARIABLE err)
  set(err_${mode} "${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vxperf demo (${mode}) failed (${rc}):\n${out_${mode}}\n${err}")
  endif()
  string(REGEX MATCH "output digest: ([0-9a-f]+)" _ "${out_${mode}}")
  if(NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "no digest line in:\n${out_${mode}}")
  endif()
  set(digest_${mode} ${CMAKE_MATCH_1})
endforeach()
if(NOT digest_on STREQUAL digest_off)
  message(FATAL_ERROR "digest differs: metrics on ${digest_on}, off ${digest_off}")
endif()
file(SIZE ${OUT}/on/records.jsonl size)
if(size EQUAL 0)
  message(FATAL_ERROR "empty records file ${OUT}/on/records.jsonl")
endif()
# Fails with `what` and the text unless the variable named `text` matches `regex`.
function(expect_match text regex what)
  if(NOT "${${text}}" MATCHES "${regex}")
    message(FATAL_ERROR "${what}:\n${${text}}")
  endif()
endfunction()
# On this CPU, too, an MFU: against the peak the demo measured (and cached) before its requests.
expect_match(err_on "\\[demo\\] peak: [0-9.e+-]+ TFLOPS fp32 on cpu: " "no measured peak line in")
expect_match(err_on "\\(MFU [0-9.]+% @" "no MFU in the [Perf] lines")
file(READ ${OUT}/on/records.jsonl records)
# The sampler's steps, one DiT call each (guidance batched), and the line's time per step.
expect_match(records "\"denoising_steps\":2[,}]" "records do not say the sampler's 2 steps")
expect_match(err_on "\\| denoising 2 steps, [0-9]+ms/step \\(1 call each\\) \\|"
             "no time per denoising step in the [Perf] lines")
expect_match(records "\"peak_source\":\"measured\"" "records do not say the peak was measured")
if(NOT EXISTS ${OUT}/cache/vxperf/peaks.json)
  message(FATAL_ERROR "the measured peak was not cached in ${OUT}/cache/vxperf")
endif()
message(STATUS "digest ${digest_on}, records ${size} bytes")


# A folder that holds a run is refused, and one that cannot be written is said, both with exit 2
# before any work: two runs' records never mix.
file(READ ${OUT}/on/records.jsonl before)
foreach(bad "${OUT}/on" "/proc/vxperf-no-such-dir")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VIDEOX_PERF ${VXPERF} demo ${args}
                          --out ${bad}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "already holds a run|cannot be written")
    message(FATAL_ERROR "vxperf demo --out ${bad}: exit ${rc}, expected 2:\n${err}")
  endif()
endforeach()
file(READ ${OUT}/on/records.jsonl after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "a refused run wrote into ${OUT}/on/records.jsonl")
endif()
