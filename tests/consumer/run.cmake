# The consumer tests, as fmt runs them: vxperf used through add_subdirectory, through an install
# (cmake --install + find_package(vxperf CONFIG)), and through pkg-config.
# Inputs: SOURCE (vxperf's source tree), BUILD (its build tree, built), WORK (a scratch directory).
file(REMOVE_RECURSE "${WORK}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "'${command}' failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

function(expect_ran out what)
  if(NOT out MATCHES "vxperf [0-9.]+: 1 request recorded")
    message(FATAL_ERROR "${what}: the consumer did not record its request:\n${out}")
  endif()
endfunction()

set(env ${CMAKE_COMMAND} -E env --unset=VIDEOX_PERF --unset=VIDEOX_PERF_JSON)
# The consumers' compiles go through ccache as vxperf's own do: a rerun rebuilds nothing.
find_program(CCACHE ccache)
set(launcher)
if(CCACHE)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()

# 1. add_subdirectory, with vxperf's defaults: the libraries alone (no command, no LibTorch
#    adapter, no demo), as its CMakeLists.txt checks.
run(${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer/subdirectory -B ${WORK}/subdirectory -G Ninja
    -DVXPERF_SOURCE_DIR=${SOURCE} ${launcher})
# The consumer's program and what it links (vxperf alone): what a consumer's build of it runs.
run(${CMAKE_COMMAND} --build ${WORK}/subdirectory --target app)
run(${env} ${WORK}/subdirectory/app)
expect_ran("${last_out}" "add_subdirectory")

# 2. cmake --install, then find_package(vxperf CONFIG REQUIRED).
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
foreach(f include/vxperf/vxperf.h lib/libvxperf.a lib/libvxperf_testing.a lib/cmake/vxperf/vxperfConfig.cmake
          lib/cmake/vxperf/vxperfConfigVersion.cmake lib/pkgconfig/vxperf.pc bin/vxperf)
  if(NOT EXISTS ${WORK}/prefix/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
run(${WORK}/prefix/bin/vxperf --version)
run(${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer/installed -B ${WORK}/installed -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK}/prefix ${launcher})
run(${CMAKE_COMMAND} --build ${WORK}/installed)
run(${env} ${WORK}/installed/app)
expect_ran("${last_out}" "find_package")
run(${env} ${WORK}/installed/doubles)
if(NOT last_out MATCHES "vxperf::testing: 1 request of 1.5 s")
  message(FATAL_ERROR "vxperf::testing, installed: ${last_out}")
endif()

# 3. pkg-config.
find_program(PKG_CONFIG pkg-config)
find_program(CXX NAMES c++ g++ clang++)
if(PKG_CONFIG AND CXX)
  run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${WORK}/prefix/lib/pkgconfig
      ${PKG_CONFIG} --cflags --libs vxperf)
  string(STRIP "${last_out}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(${CXX} -std=c++17 ${SOURCE}/tests/consumer/app.cpp ${flags} -o ${WORK}/pkgconfig-app)
  run(${env} ${WORK}/pkgconfig-app)
  expect_ran("${last_out}" "pkg-config")
else()
  message(STATUS "pkg-config or a C++ compiler missing: the pkg-config consumer was skipped")
endif()
message(STATUS "consumers: add_subdirectory, find_package and pkg-config all built and ran")
