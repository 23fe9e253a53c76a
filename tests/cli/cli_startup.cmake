# `vxperf` itself loads no LibTorch (report, trace, replay, flops start in milliseconds); demo,
# calibrate and inspect run in vxperf-torch, which it execs, with the same arguments and output.
find_program(READELF readelf)
if(READELF)
  execute_process(COMMAND "${READELF}" -d "${VXPERF}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${VXPERF} failed")
  endif()
  if(dynamic MATCHES "libtorch|libc10")
    message(FATAL_ERROR "vxperf links LibTorch:\n${dynamic}")
  endif()
endif()
execute_process(COMMAND "${VXPERF}" --version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^vxperf [0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "vxperf --version: exit ${rc}: ${out}")
endif()
execute_process(COMMAND "${VXPERF}" demo --help OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "usage: vxperf demo")
  message(FATAL_ERROR "vxperf demo --help: exit ${rc}: ${out}")
endif()
# --help lists the commands this build runs; without LibTorch (a wheel's command) it names the
# missing ones and how to get them, once.
execute_process(COMMAND "${VXPERF}" --help OUTPUT_VARIABLE out RESULT_VARIABLE rc)
# The README section it points to is the one `vxperf demo` names, where the build from source is.
set(missing "not in this build \\(they need LibTorch\\): inspect, demo, and calibrate's probe; build[^\n]*\\(README: the two commands\\)")
if(NOT rc EQUAL 0 OR NOT out MATCHES "\n  report +summarize records files")
  message(FATAL_ERROR "vxperf --help: exit ${rc}:\n${out}")
endif()
if(HELPER AND (NOT out MATCHES "\n  demo +run the embedded" OR out MATCHES "not in this build"))
  message(FATAL_ERROR "vxperf --help with LibTorch does not list demo:\n${out}")
endif()
if(NOT HELPER AND (out MATCHES "\n  (demo|inspect) " OR NOT out MATCHES "${missing}"
                   OR NOT out MATCHES "\n  calibrate +list the matmul peaks"))
  message(FATAL_ERROR "vxperf --help without LibTorch lists what it cannot run:\n${out}")
endif()
if(HELPER)
  # Copied away from its helper (an install that left libexec/ out), it lists what it has.
  file(REMOVE_RECURSE "${CMAKE_CURRENT_BINARY_DIR}/cli-startup-alone")
  file(COPY "${VXPERF}" DESTINATION "${CMAKE_CURRENT_BINARY_DIR}/cli-startup-alone")
  get_filename_component(name "${VXPERF}" NAME)
  execute_process(COMMAND "${CMAKE_CURRENT_BINARY_DIR}/cli-startup-alone/${name}" --help
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR out MATCHES "\n  demo " OR NOT out MATCHES "${missing}")
    message(FATAL_ERROR "vxperf --help away from vxperf-torch:\n${out}")
  endif()
  # The helper's own answers, through vxperf: exit status and one-line error.
  execute_process(COMMAND "${VXPERF}" inspect RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "^vxperf inspect: missing MODEL.pt")
    message(FATAL_ERROR "vxperf inspect (no model): exit ${rc}: ${err}")
  endif()
  execute_process(COMMAND "${VXPERF}" demo --frames x RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "bad or missing value for --frames")
    message(FATAL_ERROR "vxperf demo --frames x: exit ${rc}: ${err}")
  endif()
  execute_process(COMMAND "${HELPER}" frobnicate RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "usage: vxperf-torch")
    message(FATAL_ERROR "vxperf-torch frobnicate: exit ${rc}: ${err}")
  endif()
else()
  execute_process(COMMAND "${VXPERF}" inspect model.pt RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "needs LibTorch, which this build leaves out")
    message(FATAL_ERROR "vxperf inspect without LibTorch: exit ${rc}: ${err}")
  endif()
endif()
# vxperf env: every variable of the settings table, the set ones with their values; a value that
# would not parse is said as the measured program says it, and the status is 1.
execute_process(COMMAND ${CMAKE_COMMAND} -E env VIDEOX_PERF=1 VIDEOX_PERF_EVERY=abc
                        --unset=VIDEOX_PERF_JSON "${VXPERF}" env
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
string(REGEX MATCHALL "\n  VIDEOX_PERF[A-Z_]*" names "${out}")
list(LENGTH names count)
if(NOT rc EQUAL 1 OR NOT out MATCHES "\nset:\n  VIDEOX_PERF=1\n" OR NOT count EQUAL 27
   OR NOT out MATCHES "^vxperf: VIDEOX_PERF_EVERY=\"abc\" is not an integer; using 50\nset:")
  message(FATAL_ERROR "vxperf env: exit ${rc}, ${count} variables:\n${out}")
endif()
# Off, or with a switch that does not read, every other value is still checked, each said once.
execute_process(COMMAND ${CMAKE_COMMAND} -E env VIDEOX_PERF=yes VIDEOX_PERF_DTYPE=xyz
                        "${VXPERF}" env OUTPUT_VARIABLE out RESULT_VARIABLE rc)
string(REGEX MATCHALL "is not" said "${out}")
list(LENGTH said count)
if(NOT rc EQUAL 1 OR NOT count EQUAL 2 OR NOT out MATCHES "VIDEOX_PERF=\"yes\" is not 0, 1 or 2"
   OR NOT out MATCHES "VIDEOX_PERF_DTYPE=\"xyz\" is not bf16")
  message(FATAL_ERROR "vxperf env with a bad switch: exit ${rc}:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VIDEOX_PERF VIDEOX_PERF_DTYPE=xyz
                        "${VXPERF}" env OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 1 OR NOT out MATCHES "VIDEOX_PERF_DTYPE=\"xyz\" is not bf16")
  message(FATAL_ERROR "vxperf env, metrics off: exit ${rc}:\n${out}")
endif()
execute_process(COMMAND "${VXPERF}" env extra RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "^vxperf env: takes no arguments")
  message(FATAL_ERROR "vxperf env extra: exit ${rc}: ${err}")
endif()
