# Runs `vxperf replay` on every case and compares with the reference output using compare.py
# (with its truth, where the reference is wrong on the case).
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
  # The reference's output, or its truth where the reference is wrong (make_truth.py).
  set(expected "${stem}.expected")
  if(EXISTS "${stem}.truth.jsonl")
    set(expected "${stem}.truth")
  endif()
  execute_process(COMMAND python3 "${COMPARE}" "${expected}.jsonl" "${out}.jsonl"
                          "${expected}.log" "${out}.log"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE diff)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} differs from the reference:\n${diff}")
  endif()
endforeach()
