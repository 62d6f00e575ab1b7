# libFuzzer builds (tests/fuzz): with -DSF_FUZZ=ON every library is compiled with coverage
# instrumentation plus ASan+UBSan (-fsanitize=fuzzer-no-link,address,undefined) and tests/fuzz adds
# one fuzz_<target> executable per target (-fsanitize=fuzzer). Needs clang:
#   CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DSF_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
# scripts/fuzz-smoke does that and runs each target for a bounded time. Without SF_FUZZ, tests/fuzz
# still builds a plain replay driver per target that runs the corpus and the regressions as CTest
# tests (fuzz_replay_*), with any compiler. Include this file before the libraries are defined.
include_guard(GLOBAL)
option(SF_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only; implies ASan+UBSan)" OFF)
if(SF_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SF_FUZZ=ON needs clang (libFuzzer), but the C compiler is ${CMAKE_C_COMPILER_ID}. "
                        "Configure a fresh build directory with CC=clang-14 CXX=clang++-14 "
                        "(Debian packages clang-14 and libclang-rt-14-dev), or run scripts/fuzz-smoke.")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
