# Installation: headers, libraries, the vxperf command, a CMake package (find_package(vxperf))
# and a pkg-config file (vxperf.pc). The LibTorch adapter is a component of its own, loaded when
# its consumer's LibTorch is found.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VXPERF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vxperf)

set(_vxperf_headers_excluded)
if(NOT VXPERF_HAVE_TORCH)
  set(_vxperf_headers_excluded PATTERN "torch.h" EXCLUDE PATTERN "torch_api.h" EXCLUDE
      PATTERN "torch_probe.h" EXCLUDE PATTERN "torch_reading.h" EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vxperf DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" ${_vxperf_headers_excluded})

install(TARGETS vxperf vxperf_analysis vxperf_testing EXPORT vxperfTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT vxperfTargets NAMESPACE vxperf:: DESTINATION ${VXPERF_CMAKE_DIR})

if(VXPERF_HAVE_TORCH)
  install(TARGETS vxperf_torch EXPORT vxperfTorchTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT vxperfTorchTargets NAMESPACE vxperf:: DESTINATION ${VXPERF_CMAKE_DIR})
endif()

if(VXPERF_BUILD_CLI)
  install(TARGETS vxperf_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(TARGET vxperf_torch_cli)  # what `vxperf demo`, `calibrate` and `inspect` exec
    install(TARGETS vxperf_torch_cli RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/vxperf)
  endif()
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/vxperfConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vxperfConfig.cmake
                              INSTALL_DESTINATION ${VXPERF_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vxperfConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vxperfConfig.cmake ${PROJECT_BINARY_DIR}/vxperfConfigVersion.cmake
        DESTINATION ${VXPERF_CMAKE_DIR})

# Static libraries carry their own dependencies on the link line; shared ones keep them private.
set(_vxperf_pc_deps "-ldl -pthread")
if(VXPERF_HAVE_HTTPLIB)
  string(PREPEND _vxperf_pc_deps "-lcpp-httplib ")
endif()
if(BUILD_SHARED_LIBS)
  set(VXPERF_PC_LIBS "-L\${libdir} -lvxperf")
  set(VXPERF_PC_LIBS_PRIVATE "${_vxperf_pc_deps}")
else()
  set(VXPERF_PC_LIBS "-L\${libdir} -lvxperf ${_vxperf_pc_deps}")
  set(VXPERF_PC_LIBS_PRIVATE "")
endif()
file(RELATIVE_PATH VXPERF_PC_PREFIX_FROM_PCDIR
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" VXPERF_PC_PREFIX_FROM_PCDIR "${VXPERF_PC_PREFIX_FROM_PCDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/vxperf.pc.in ${PROJECT_BINARY_DIR}/vxperf.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vxperf.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
