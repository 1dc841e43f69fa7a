# Run by goscope_discover_tests (GoscopeDoctest.cmake) after each build of a
# doctest executable: writes CTEST_FILE, one add_test and one
# set_tests_properties per test case, labelled TEST_LABEL plus its suite.

# The lines of a doctest listing (--list-test-cases, --list-test-suites),
# without its banner and rules.
function(doctest_list out)
  execute_process(COMMAND "${TEST_EXECUTABLE}" ${ARGN}
    OUTPUT_VARIABLE text RESULT_VARIABLE rc WORKING_DIRECTORY "${TEST_WORKING_DIR}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "'${TEST_EXECUTABLE} ${ARGN}' failed (${rc}):\n${text}")
  endif()
  # A ';' would split a name in two CMake list items, hence two tests that
  # each match nothing (and pass): refused here rather than run wrong.
  if(text MATCHES ";")
    string(REGEX MATCH "[^\n]*;[^\n]*" bad "${text}")
    message(FATAL_ERROR "${TEST_EXECUTABLE}: a test case name holds ';' (a CMake list "
                        "separator): '${bad}'; write a comma instead")
  endif()
  string(REPLACE "\n" ";" lines "${text}")
  set(names)
  foreach(line IN LISTS lines)
    if(line STREQUAL "" OR line MATCHES "^=+$" OR line MATCHES "^\\[doctest\\] ")
      continue()
    endif()
    list(APPEND names "${line}")
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# One argument of the generated script: a bracket argument when it holds
# anything but plain characters (as doctestAddTests.cmake quotes them).
function(quoted out value)
  if(value MATCHES "[^-./:a-zA-Z0-9_]")
    set(${out} "[==[${value}]==]" PARENT_SCOPE)
  else()
    set(${out} "${value}" PARENT_SCOPE)
  endif()
endfunction()

if(NOT EXISTS "${TEST_EXECUTABLE}")
  message(FATAL_ERROR "no test executable '${TEST_EXECUTABLE}'")
endif()

doctest_list(tests --list-test-cases)
doctest_list(suites --list-test-suites)
foreach(suite IN LISTS suites)
  if(NOT suite MATCHES "^[a-zA-Z0-9_]+$")
    message(FATAL_ERROR "${TEST_EXECUTABLE}: test suite '${suite}' is not a plain word; "
                        "suites are ctest labels (tests/README.md)")
  endif()
  doctest_list(members --test-suite=${suite} --list-test-cases)
  foreach(test IN LISTS members)
    string(MD5 key "${test}")
    set(suite_of_${key} ${suite})
  endforeach()
endforeach()

set(script "")
foreach(test IN LISTS tests)
  string(MD5 key "${test}")
  set(labels ${TEST_LABEL})
  set(extra)
  if(DEFINED suite_of_${key})
    list(APPEND labels ${suite_of_${key}})
    # loaded: loads the machine on purpose; measured: compares costs measured
    # in the same run, which a test beside it would skew. Both run alone.
    if(suite_of_${key} STREQUAL "loaded" OR suite_of_${key} STREQUAL "measured")
      list(APPEND extra RUN_SERIAL TRUE)
    endif()
  endif()
  # The name goes back to doctest as a --test-case filter, where a comma
  # separates filters: escaped, as doctest_discover_tests does.
  string(REPLACE "," "\\," filter "${test}")
  quoted(name "${TEST_PREFIX}${test}")
  quoted(exe "${TEST_EXECUTABLE}")
  quoted(arg "--test-case=${filter}")
  string(APPEND script "add_test(${name} ${exe} ${arg})\n")
  set(props WORKING_DIRECTORY "${TEST_WORKING_DIR}" ${TEST_PROPERTIES} ${extra})
  set(args "")
  foreach(p IN LISTS props)
    quoted(q "${p}")
    string(APPEND args " ${q}")
  endforeach()
  string(JOIN ";" labels ${labels})
  quoted(l "${labels}")
  string(APPEND script "set_tests_properties(${name} PROPERTIES${args} LABELS ${l})\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
