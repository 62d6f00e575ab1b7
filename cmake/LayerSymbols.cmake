# The call check of the layer map (cmake/LayerMap.cmake), run by the build once every layer library
# is built (target sf_layer_symbols): every function or variable a layer library uses from another
# layer library must come from a layer its _USES lists. This catches what the include check cannot:
# a call through a declaration written by hand, or a function declared in one layer's header but
# defined in another layer's directory.
#
#   cmake -DSF_NM=<nm> -DSF_LIB_<layer>=<libsf_<layer>.a> ... -P cmake/LayerSymbols.cmake
#
# Fails (exit status 1) listing each crossing as
#   <layer> (<object>) uses <symbol>, defined in layer '<other>' (<object>): ...
cmake_minimum_required(VERSION 3.18)
include(${CMAKE_CURRENT_LIST_DIR}/LayerMap.cmake)
if(NOT SF_NM)
  set(SF_NM nm)
endif()

# nm -g -P -A lines: "<archive>[<object>]: <symbol> <type> ..."
foreach(L ${SF_LAYERS})
  if(NOT SF_LIB_${L})
    message(FATAL_ERROR "LayerSymbols.cmake: SF_LIB_${L} (the layer's static library) is not set")
  endif()
  execute_process(COMMAND ${SF_NM} -g -P -A "${SF_LIB_${L}}" OUTPUT_VARIABLE _out RESULT_VARIABLE _rc
                  ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "LayerSymbols.cmake: ${SF_NM} ${SF_LIB_${L}} failed (${_rc}): ${_err}")
  endif()
  string(REPLACE ";" "," _out "${_out}")
  string(REPLACE "\n" ";" _lines "${_out}")
  set(_und_${L} "")
  foreach(line ${_lines})
    if(NOT line MATCHES "\\[([^]]+)\\]: ([A-Za-z0-9_$.]+) ([A-Za-z]) ")
      continue()
    endif()
    set(obj "${CMAKE_MATCH_1}")
    set(sym "${CMAKE_MATCH_2}")
    set(type "${CMAKE_MATCH_3}")
    if(type STREQUAL "U")
      list(APPEND _und_${L} "${sym}|${obj}")
    elseif(type MATCHES "^[TDBRGSVW]$" AND NOT DEFINED _def_${sym})
      set(_def_${sym} "${L}|${obj}")
    endif()
  endforeach()
endforeach()

set(_bad "")
set(_ncross 0)
foreach(L ${SF_LAYERS})
  foreach(u ${_und_${L}})
    string(REPLACE "|" ";" u "${u}")
    list(GET u 0 sym)
    list(GET u 1 obj)
    if(NOT DEFINED _def_${sym})
      continue() # libc, StarPU, MPI, ...
    endif()
    string(REPLACE "|" ";" d "${_def_${sym}}")
    list(GET d 0 T)
    list(GET d 1 dobj)
    if(T STREQUAL L)
      continue()
    endif()
    math(EXPR _ncross "${_ncross} + 1")
    list(FIND SF_LAYER_${L}_USES ${T} _i)
    if(_i LESS 0)
      string(REPLACE ";" " " _uses "${SF_LAYER_${L}_USES}")
      list(APPEND _bad
           "layer '${L}' (${obj}) uses ${sym}, defined in layer '${T}' (${dobj}): '${L}' may use layers ${_uses}")
    endif()
  endforeach()
endforeach()

list(REMOVE_DUPLICATES _bad)
list(LENGTH _bad _nbad)
if(_nbad GREATER 0)
  string(REPLACE ";" "\n  " _list "${_bad}")
  message(FATAL_ERROR "layer check: ${_nbad} call(s) break the layer map (cmake/LayerMap.cmake):\n"
                      "  ${_list}\n")
endif()
message(STATUS "layer check: ${_ncross} uses of symbols across layer libraries, all within the layer map")
