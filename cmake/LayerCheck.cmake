# The include check of the layer map (cmake/LayerMap.cmake), run by the build before any layer
# library compiles (target sf_layer_check) and by CTest (tests/layers):
#
#   cmake -DSF_LAYER_ROOT=<source dir> -P cmake/LayerCheck.cmake
#   cmake -DSF_LAYER_ROOT=<source dir> -DSF_LAYER_EXTRA_FILE=<file> -DSF_LAYER_EXTRA_AS=<path> -P ...
#
# The second form also checks <file> as if it were <path> (relative to the source dir), for tests.
# Every #include of every .c/.h/.cu file of the layer directories and of include/scaffold/*.h is
# resolved to a layer; an include the map does not allow is reported as
#   <file>: #include "<header>": <why>
# and the script fails (exit status 1) after listing all of them. Nothing is written.
cmake_minimum_required(VERSION 3.18)
include(${CMAKE_CURRENT_LIST_DIR}/LayerMap.cmake)
if(NOT SF_LAYER_ROOT OR NOT IS_DIRECTORY "${SF_LAYER_ROOT}")
  message(FATAL_ERROR "LayerCheck.cmake: set SF_LAYER_ROOT to the source directory (got '${SF_LAYER_ROOT}')")
endif()
get_filename_component(_root "${SF_LAYER_ROOT}" REALPATH)

# public header name -> layer
foreach(L ${SF_LAYERS})
  foreach(h ${SF_LAYER_${L}_HEADERS})
    if(DEFINED _hdr_${h})
      message(FATAL_ERROR "cmake/LayerMap.cmake: header ${h}.h is listed in layers ${_hdr_${h}} and ${L}")
    endif()
    set(_hdr_${h} ${L})
  endforeach()
endforeach()

# Records one violation; the arguments are concatenated.
macro(sf_bad)
  string(CONCAT _m ${ARGN})
  list(APPEND _bad "${_m}")
endmacro()

# The layer owning a path relative to the root (longest matching directory), or "".
function(sf_layer_of rel out)
  set(best "")
  set(bestlen 0)
  foreach(L ${SF_LAYERS})
    foreach(d ${SF_LAYER_${L}_DIRS})
      string(LENGTH "${d}/" n)
      string(SUBSTRING "${rel}" 0 ${n} pre)
      if(pre STREQUAL "${d}/" AND n GREATER bestlen)
        set(best ${L})
        set(bestlen ${n})
      endif()
    endforeach()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# ---- the files: every layer directory, and the public headers ----
set(_files "")
foreach(L ${SF_LAYERS})
  foreach(d ${SF_LAYER_${L}_DIRS})
    file(GLOB_RECURSE _f RELATIVE "${_root}" "${_root}/${d}/*.c" "${_root}/${d}/*.h"
         "${_root}/${d}/*.cu")
    list(APPEND _files ${_f})
  endforeach()
endforeach()
file(GLOB _f RELATIVE "${_root}" "${_root}/include/scaffold/*.h")
list(APPEND _files ${_f})
list(REMOVE_DUPLICATES _files)
list(SORT _files)
set(_pairs "") # "rel|absolute path to read"
foreach(rel ${_files})
  list(APPEND _pairs "${rel}|${_root}/${rel}")
endforeach()
if(SF_LAYER_EXTRA_FILE)
  list(APPEND _pairs "${SF_LAYER_EXTRA_AS}|${SF_LAYER_EXTRA_FILE}")
endif()

set(_bad "")
set(_nincl 0)
set(_nfiles 0)
foreach(pair ${_pairs})
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 rel)
  list(GET pair 1 abs)
  math(EXPR _nfiles "${_nfiles} + 1")
  # the file's layer
  if(rel MATCHES "^include/scaffold/([A-Za-z0-9_]+)\\.h$")
    set(h ${CMAKE_MATCH_1})
    if(NOT DEFINED _hdr_${h})
      sf_bad("${rel}: public header in no layer: add '${h}' to one layer's SF_LAYER_<layer>_HEADERS in "
             "cmake/LayerMap.cmake")
      continue()
    endif()
    set(L ${_hdr_${h}})
  else()
    sf_layer_of("${rel}" L)
    if(NOT L)
      sf_bad("${rel}: not in any layer directory of cmake/LayerMap.cmake")
      continue()
    endif()
  endif()
  get_filename_component(reldir "${rel}" DIRECTORY)
  file(STRINGS "${abs}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  foreach(line ${_lines})
    if(NOT line MATCHES "#[ \t]*include[ \t]*([\"<])([^\">]+)[\">]")
      continue()
    endif()
    set(delim "${CMAKE_MATCH_1}")
    set(inc "${CMAKE_MATCH_2}")
    math(EXPR _nincl "${_nincl} + 1")
    if(delim STREQUAL "<")
      set(shown "<${inc}>")
      if(inc MATCHES "^(starpu[A-Za-z0-9_]*\\.h|starpu/.*|mpi\\.h)$" AND NOT SF_LAYER_${L}_STARPU)
        sf_bad("${rel}: #include ${shown}: layer '${L}' must not use StarPU or MPI directly (it goes through the "
               "runtime's wrappers, see SF_LAYER_${L}_STARPU in cmake/LayerMap.cmake)")
      endif()
      continue()
    endif()
    set(shown "\"${inc}\"")
    # resolve: scaffold/<name>.h is a public header; anything else is relative to the including file
    set(tgt "")
    if(inc MATCHES "^scaffold/([A-Za-z0-9_]+)\\.h$")
      set(tgtrel "include/${inc}")
    else()
      get_filename_component(_abs "${_root}/${reldir}/${inc}" ABSOLUTE)
      if(NOT EXISTS "${_abs}")
        sf_bad("${rel}: #include ${shown}: not found next to the file (quoted includes must name "
               "scaffold/<name>.h or a file relative to the including one)")
        continue()
      endif()
      file(RELATIVE_PATH tgtrel "${_root}" "${_abs}")
    endif()
    if(tgtrel MATCHES "^include/scaffold/([A-Za-z0-9_]+)\\.h$")
      set(h ${CMAKE_MATCH_1})
      if(NOT DEFINED _hdr_${h})
        sf_bad("${rel}: #include ${shown}: public header in no layer: add '${h}' to one layer's "
               "SF_LAYER_<layer>_HEADERS in cmake/LayerMap.cmake")
        continue()
      endif()
      set(T ${_hdr_${h}})
      list(FIND SF_LAYER_${L}_USES ${T} _i)
      if(_i LESS 0)
        string(REPLACE ";" " " _uses "${SF_LAYER_${L}_USES}")
        sf_bad("${rel}: #include ${shown}: layer '${L}' must not include a header of layer '${T}' "
               "(it may include layers: ${_uses})")
      endif()
    else()
      sf_layer_of("${tgtrel}" T)
      if(NOT T)
        sf_bad("${rel}: #include ${shown}: ${tgtrel} is outside every layer of cmake/LayerMap.cmake")
      elseif(NOT T STREQUAL L)
        sf_bad("${rel}: #include ${shown}: ${tgtrel} is a private header of layer '${T}' (layer '${L}' may use "
               "only the public headers, include/scaffold/, of the layers it may include)")
      endif()
    endif()
  endforeach()
endforeach()

list(LENGTH _bad _nbad)
if(_nbad GREATER 0)
  string(REPLACE ";" "\n  " _list "${_bad}")
  message(FATAL_ERROR "layer check: ${_nbad} include(s) break the layer map (cmake/LayerMap.cmake):\n"
                      "  ${_list}\n")
endif()
message(STATUS "layer check: ${_nfiles} files, ${_nincl} includes, all within the layer map")
