# Runs `vxperf replay` on every case and compares with the reference output using compare.py.
file(GLOB scripts "${CASES}/*.events.jsonl")
foreach(script ${scripts})
  string(REGEX REPLACE "\\.events\\.jsonl$" "" stem "${script}")
  get_filename_component(name "${stem}" NAME)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/cli-${name}")
  execute_process(COMMAND "${VXPERF}" replay "${script}"
                  OUTPUT_FILE "${out}.jsonl" ERROR_FILE "${out}.log" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vxperf replay ${name} exited ${rc}")
  endif()
  execute_process(COMMAND python3 "${COMPARE}" "${stem}.expected.jsonl" "${out}.jsonl"
                          "${stem}.expected.log" "${out}.log"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE diff)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} differs from the reference:\n${diff}")
  endif()
endforeach()
