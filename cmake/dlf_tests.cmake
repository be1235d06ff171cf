# test_<floor>: the doctest binary of tests/<floor>/*.cpp.
function(dlf_add_test_binary floor)
  file(GLOB _src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${floor}/*.cpp)
  set(target test_${floor})
  add_executable(${target} ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp ${_src})
  target_link_libraries(${target} PRIVATE dlf::dlf doctest::doctest ZLIB::ZLIB PNG::PNG)  # IDX, PNG test files
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests)
  dlf_project_flags(${target})
endfunction()

# dlf_add_test_suite(floor): tests/<floor>/*.cpp -> one binary, registered with ctest
# one entry per doctest test case (so a failure names its case).
function(dlf_add_test_suite floor)
  dlf_add_test_binary(${floor})
  set(target test_${floor})
  include(${doctest_DIR}/doctest.cmake OPTIONAL RESULT_VARIABLE _doctest_cmake)
  if(_doctest_cmake)
    doctest_discover_tests(${target} TEST_PREFIX "${floor}: ")
  else()
    add_test(NAME ${target} COMMAND ${target})
  endif()
endfunction()

# dlf_add_mpi_test(name ranks target [EXIT_CODE code] [ARGS args...]): a ctest entry running
# `target` as `ranks` processes under mpirun — as root too (containers, CI), and with more ranks
# than cores. Each test case needs every rank, so the entry runs the binary, not one case. With
# EXIT_CODE it passes when mpirun ends with exactly that code.
function(dlf_add_mpi_test name ranks target)
  cmake_parse_arguments(PARSE_ARGV 3 _mpi "" "EXIT_CODE" "ARGS")
  set(_run ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} --allow-run-as-root
           --oversubscribe ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS}
           ${_mpi_ARGS})
  if(DEFINED _mpi_EXIT_CODE)
    set(_run bash -c "\"$@\"\ntest $? -eq ${_mpi_EXIT_CODE}" mpirun ${_run})  # "\n": ";" splits lists
  endif()
  add_test(NAME ${name} COMMAND ${_run})
  # LeakSanitizer (the asan preset): OpenMPI never frees what MPI_Init and its threads
  # allocate. The suppressions name only OpenMPI's libraries, so a leak in dlf still fails the
  # test; they need full stacks (OpenMPI has no frame pointers): fast_unwind_on_malloc=0.
  set_tests_properties(${name} PROPERTIES
    PROCESSORS ${ranks} TIMEOUT 300
    ENVIRONMENT "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/mpi/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0")
endfunction()
