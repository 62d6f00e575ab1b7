# Sanitizer build with GCC: every executable gets tests/sanitize/ubsan_log_path.c, whose constructor
# points the shared libubsan's report file at UBSAN_OPTIONS' log_path. GCC's
# -fsanitize=address,undefined loads libubsan.so beside libasan.so, and that libubsan never applies
# log_path itself, so UBSan reports went to stderr where scripts/sanitizer-logs could not see them
# (-static-libubsan fixes UBSan but sends ASan's leak reports to stderr instead).
# tests/sanitize/README.md has the evidence; test sanitize_ubsan_log checks the result.
# Included at the end of the top-level CMakeLists.txt, once every executable exists.
function(_sf_executables_under dir out)
  set(result "")
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND result ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d ${subdirs})
    _sf_executables_under(${d} sub)
    list(APPEND result ${sub})
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

if(SF_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  _sf_executables_under(${PROJECT_SOURCE_DIR} _sf_all_executables)
  foreach(t ${_sf_all_executables})
    target_sources(${t} PRIVATE ${PROJECT_SOURCE_DIR}/tests/sanitize/ubsan_log_path.c)
    target_link_libraries(${t} PRIVATE ${CMAKE_DL_LIBS})
  endforeach()
endif()
