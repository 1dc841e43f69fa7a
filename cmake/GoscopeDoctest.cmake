# goscope_discover_tests(TARGET PREFIX prefix LABEL label [PROPERTIES name value ...])
#
# Registers every doctest test case of TARGET as a ctest test named
# "<prefix><test case>", as doctest_discover_tests does, and labels it with
# LABEL (the tier: unit, runtime) plus the name of the test case's doctest
# suite, so that a test says its own tier in its source:
#
#   TEST_CASE("..." * doctest::test_suite("slow"))    ->  LABELS runtime;slow
#   TEST_SUITE("loaded") { TEST_CASE("...") {...} }   ->  LABELS runtime;loaded
#
# A test of the suite "loaded" loads the machine on purpose, so it also runs
# alone (RUN_SERIAL): nothing timed may run beside it.
#
# Why not doctest's own ADD_LABELS (doctest 2.4.9, Debian 12): it asks the
# executable for each test's suite with --test-case=<name>, a filter that
# splits at commas and expands '*' and '?': a name like "cost meter: share,
# peak and ..." matches nothing and the test silently gets no label. Its
# LABELS also replace the ones given in PROPERTIES. Here each suite is asked
# for its tests (--test-suite=<suite> --list-test-cases; suite names are
# plain words), which needs one run per suite, not one per test.
#
# The tests are listed after each build of TARGET (POST_BUILD), like
# doctest_discover_tests.
set(GOSCOPE_DOCTEST_ADD_TESTS ${CMAKE_CURRENT_LIST_DIR}/goscope_doctest_add_tests.cmake)

function(goscope_discover_tests target)
  cmake_parse_arguments(D "" "PREFIX;LABEL" "PROPERTIES" ${ARGN})
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake)
  set(tests_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake)
  add_custom_command(TARGET ${target} POST_BUILD
    BYPRODUCTS ${tests_file}
    COMMAND ${CMAKE_COMMAND}
            -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "TEST_WORKING_DIR=${CMAKE_CURRENT_BINARY_DIR}"
            -D "TEST_PREFIX=${D_PREFIX}"
            -D "TEST_LABEL=${D_LABEL}"
            -D "TEST_PROPERTIES=${D_PROPERTIES}"
            -D "CTEST_FILE=${tests_file}"
            -P ${GOSCOPE_DOCTEST_ADD_TESTS}
    VERBATIM)
  file(WRITE ${include_file}
    "if(EXISTS \"${tests_file}\")\n"
    "  include(\"${tests_file}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
