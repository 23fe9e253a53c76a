# `vxperf inspect --json` agrees with the reference's reading of every conformance model, and bad
# input exits 2.
foreach(name wan_like diffusers_like hunyuan_like zimage_like)
  execute_process(COMMAND ${VXPERF} inspect ${MODELS}/${name}.pt --json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "inspect ${name} failed (${rc}): ${err}")
  endif()
  file(READ ${MODELS}/${name}.expected.json expected)
  foreach(key params text_tokens attn.self attn.cross attn.modules)
    string(REPLACE "." ";" path ${key})
    string(JSON want GET "${expected}" ${path})
    string(JSON got GET "${out}" ${path})
    if(NOT want EQUAL got)
      message(FATAL_ERROR "${name} ${key}: inspect says ${got}, the reference ${want}")
    endif()
  endforeach()
endforeach()
execute_process(COMMAND ${VXPERF} inspect ${MODELS}/missing.pt RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "inspect of a missing file exited ${rc}, not 2: ${err}")
endif()
