# CTest layers_refuse: runs cmake/LayerCheck.cmake on scratch files placed (virtually) in the tree and
# checks its verdict. Each case: the path the file pretends to have, its include lines, and either
# ACCEPT or the text the refusal must contain. Fails naming every case that got the wrong verdict.
cmake_minimum_required(VERSION 3.18)
file(MAKE_DIRECTORY ${SF_SCRATCH})
set(_failed "")
set(_n 0)

function(check_case as includes expect)
  math(EXPR n "${_n} + 1")
  set(_n ${n} PARENT_SCOPE)
  set(f ${SF_SCRATCH}/case${n}.c)
  string(REPLACE "|" "\n" body "${includes}")
  file(WRITE ${f} "/* scratch file of tests/layers/refuse.cmake */\n${body}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -DSF_LAYER_ROOT=${SF_SOURCE_DIR} -DSF_LAYER_EXTRA_FILE=${f}
                          -DSF_LAYER_EXTRA_AS=${as} -P ${SF_SOURCE_DIR}/cmake/LayerCheck.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE "\n" " " flat "${out}${err}")
  string(REGEX REPLACE "  +" " " flat "${flat}")
  if(expect STREQUAL "ACCEPT")
    if(NOT rc EQUAL 0)
      list(APPEND _failed "case ${n} (${as}: ${includes}): refused, expected accepted:\n${out}${err}")
    else()
      message(STATUS "ok: ${as} may ${includes}")
    endif()
  else()
    string(FIND "${flat}" "${expect}" at)
    if(rc EQUAL 0)
      list(APPEND _failed
           "case ${n} (${as}: ${includes}): accepted (exit 0), expected a refusal containing '${expect}'")
    elseif(at LESS 0)
      list(APPEND _failed
           "case ${n} (${as}: ${includes}): refused (exit ${rc}), but the message lacks '${expect}':\n${out}${err}")
    else()
      message(STATUS "ok: ${as} may not ${includes}: ...${expect}...")
    endif()
  endif()
  set(_failed "${_failed}" PARENT_SCOPE)
endfunction()

# allowed: the control cases (a checker that refuses everything must fail this test)
check_case(codelets/zz_case.c
           "#include \"scaffold/tasks.h\"|#include \"scaffold/dist.h\"|#include \"codelet_common.h\"" ACCEPT)
check_case(src/comm/zz_case.c "#include \"scaffold/tasks.h\"|#include \"scaffold/tensor.h\"" ACCEPT)
check_case(src/train/zz_case.c
           "#include \"scaffold/comm.h\"|#include \"graph_internal.h\"|#include \"scaffold/dist.h\"" ACCEPT)
# refused: upward includes
check_case(codelets/zz_case.c "#include \"scaffold/trainer.h\""
           "codelets/zz_case.c: #include \"scaffold/trainer.h\": layer 'codelets' must not include a header of layer")
check_case(codelets/zz_case.c "#include \"scaffold/comm.h\""
           "layer 'codelets' must not include a header of layer 'comm'")
check_case(src/runtime/zz_case.c "#include \"scaffold/tasks.h\""
           "src/runtime/zz_case.c: #include \"scaffold/tasks.h\": layer 'runtime' must not include a header")
check_case(src/runtime/zz_case.c "#include \"scaffold/opencl.h\""
           "layer 'runtime' must not include a header of layer 'codelets'")
check_case(src/model/zz_case.c "#include \"scaffold/ops.h\""
           "layer 'model' must not include a header of layer 'kernels'")
check_case(src/train/zz_case.c "#include \"scaffold/bench.h\""
           "layer 'train' must not include a header of layer 'harness'")
check_case(src/kernels/common/zz_case.c "#include \"scaffold/tensor.h\""
           "layer 'kernels' must not include a header of layer 'runtime'")
# refused: another layer's private header
check_case(codelets/zz_case.c "#include \"../src/train/graph_internal.h\""
           "src/train/graph_internal.h is a private header of layer 'train'")
check_case(src/train/zz_case.c "#include \"../../codelets/codelet_common.h\""
           "codelets/codelet_common.h is a private header of layer 'codelets'")
# refused: StarPU where the map says none
check_case(src/kernels/common/zz_case.c "#include <starpu.h>" "layer 'kernels' must not use StarPU or MPI directly")
check_case(src/comm/zz_case.c "#include <starpu_mpi.h>" "layer 'comm' must not use StarPU or MPI directly")
# refused: a public header no layer owns
check_case(include/scaffold/zz_case.h "#include \"scaffold/common.h\"" "public header in no layer: add 'zz_case'")

file(REMOVE_RECURSE ${SF_SCRATCH})
list(LENGTH _failed nf)
if(nf GREATER 0)
  string(REPLACE ";" "\n" msg "${_failed}")
  message(FATAL_ERROR "layers_refuse: ${nf} of ${_n} cases got the wrong verdict:\n${msg}")
endif()
message(STATUS "layers_refuse: all ${_n} cases as expected")
