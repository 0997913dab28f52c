# Runs cmake/check_include_rules.cmake on a fixture tree and passes only if the checker
# fails naming each expected violation, and no other: a checker that always passed (or
# always failed, or named the wrong file) would fail this test.
#   -DCHECKER=<path of check_include_rules.cmake> -DROOT=<fixture tree>
#   -DEXPECT="text|text|..."   strings the failure message must contain (file, include, rule)
#   -DVIOLATIONS=<n>           the number of violations it must report
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${ROOT} -P ${CHECKER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(report "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the checker accepted ${ROOT}; it should have failed:\n${report}")
endif()
string(REPLACE "|" ";" expected "${EXPECT}")
foreach(text ${expected})
  string(FIND "${report}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the checker's failure does not name \"${text}\":\n${report}")
  endif()
endforeach()
string(REGEX MATCHALL ": #include" found "${report}")
list(LENGTH found count)
if(NOT count EQUAL VIOLATIONS)
  message(FATAL_ERROR "the checker reported ${count} violations, expected ${VIOLATIONS}:\n${report}")
endif()
message(STATUS "the checker rejected ${ROOT} as expected")
