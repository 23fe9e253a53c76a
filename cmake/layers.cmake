# The library's layers (docs/ARCHITECTURE.md): one folder of src/ each, built as an object
# library with its dependencies declared, so that the build itself says what may use what.
#
#   vxperf_layer(NAME DIR src/x INTO target [DEPENDS layer...] [HEADERS header...]
#                [EXCLUDE file...] [LIBS lib...])
#
# INTO: the library the layer's objects go into (vxperf, vxperf_analysis). HEADERS: the public
# headers (include/vxperf/) the layer owns: who may include them is who may depend on the layer.
# LIBS: what its sources compile and link against.
#
# Where vxperf is its own project (VXPERF_LAYER_TARGETS), each layer is an object library whose
# sources see only its own folder and its dependencies' (an include tree of links under the build
# folder), so an include against the layering does not compile; the layering test
# (tests/layers/) checks every include, public headers included, against the same declarations.
# Embedded in another project, the same sources compile straight into the library, and a
# consumer builds nothing but the libraries it links.

set(VXPERF_LAYER_TREES ${PROJECT_BINARY_DIR}/vxperf_layers)

function(vxperf_layer name)
  cmake_parse_arguments(L "" "DIR;INTO" "DEPENDS;HEADERS;EXCLUDE;LIBS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${L_DIR}/*.cpp)
  foreach(excluded ${L_EXCLUDE})
    list(REMOVE_ITEM sources ${PROJECT_SOURCE_DIR}/${L_DIR}/${excluded})
  endforeach()
  # Every layer it may use: its own dependencies and theirs.
  set(closure ${L_DEPENDS})
  foreach(dep ${L_DEPENDS})
    get_property(dep_closure GLOBAL PROPERTY VXPERF_LAYER_${dep}_CLOSURE)
    list(APPEND closure ${dep_closure})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY VXPERF_LAYER_${name}_CLOSURE ${closure})
  set_property(GLOBAL APPEND PROPERTY VXPERF_LAYERS ${name})
  set_property(GLOBAL PROPERTY VXPERF_LAYER_${name}_DIR ${L_DIR})
  set_property(GLOBAL PROPERTY VXPERF_LAYER_${name}_DEPENDS ${L_DEPENDS})
  set_property(GLOBAL PROPERTY VXPERF_LAYER_${name}_HEADERS ${L_HEADERS})

  if(VXPERF_LAYER_TARGETS)
    set(target vxperf_layer_${name})
    add_library(${target} OBJECT ${sources})
    # The include tree of this layer: links to its own folder and to its dependencies'.
    set(tree ${VXPERF_LAYER_TREES}/${name})
    file(REMOVE_RECURSE ${tree})
    file(MAKE_DIRECTORY ${tree})
    foreach(layer ${name} ${closure})
      get_property(dir GLOBAL PROPERTY VXPERF_LAYER_${layer}_DIR)
      get_filename_component(folder ${dir} NAME)
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${tree}/${folder} SYMBOLIC)
    endforeach()
    target_include_directories(${target}
      PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> PRIVATE ${tree})
    target_compile_features(${target} PUBLIC cxx_std_17)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    foreach(dep ${L_DEPENDS})
      target_link_libraries(${target} PUBLIC vxperf_layer_${dep})
    endforeach()
    if(L_LIBS)
      target_link_libraries(${target} PRIVATE ${L_LIBS})
    endif()
    target_sources(${L_INTO} PRIVATE $<TARGET_OBJECTS:${target}>)
  else()
    target_sources(${L_INTO} PRIVATE ${sources})
  endif()
  if(L_LIBS)
    target_link_libraries(${L_INTO} PRIVATE ${L_LIBS})
  endif()
endfunction()

# Writes what the layering test checks: every layer's folder, dependencies and public headers, and
# the front ends, which may include public headers only.
#   vxperf_write_layer_manifest(path FRONT_ENDS dir... FRONT_END_HEADERS header...)
function(vxperf_write_layer_manifest path)
  cmake_parse_arguments(M "" "" "FRONT_ENDS;FRONT_END_HEADERS" ${ARGN})
  get_property(layers GLOBAL PROPERTY VXPERF_LAYERS)
  set(text "{\n  \"layers\": [\n")
  set(first TRUE)
  foreach(layer ${layers})
    get_property(dir GLOBAL PROPERTY VXPERF_LAYER_${layer}_DIR)
    get_property(deps GLOBAL PROPERTY VXPERF_LAYER_${layer}_DEPENDS)
    get_property(headers GLOBAL PROPERTY VXPERF_LAYER_${layer}_HEADERS)
    list(TRANSFORM deps PREPEND "\"")
    list(TRANSFORM deps APPEND "\"")
    list(JOIN deps ", " deps)
    list(TRANSFORM headers PREPEND "\"")
    list(TRANSFORM headers APPEND "\"")
    list(JOIN headers ", " headers)
    if(NOT first)
      string(APPEND text ",\n")
    endif()
    set(first FALSE)
    string(APPEND text "    {\"name\": \"${layer}\", \"dir\": \"${dir}\", \"depends\": [${deps}],"
                       " \"headers\": [${headers}]}")
  endforeach()
  foreach(list front_ends front_end_headers)
    string(TOUPPER ${list} upper)
    set(${list} ${M_${upper}})
    list(TRANSFORM ${list} PREPEND "\"")
    list(TRANSFORM ${list} APPEND "\"")
    list(JOIN ${list} ", " ${list})
  endforeach()
  string(APPEND text "\n  ],\n  \"front_ends\": [${front_ends}],\n"
                     "  \"front_end_headers\": [${front_end_headers}]\n}\n")
  file(WRITE ${path} "${text}")
endfunction()
