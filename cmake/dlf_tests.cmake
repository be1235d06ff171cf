# dlf_add_test_suite(floor): tests/<floor>/*.cpp -> one binary, registered with ctest
# one entry per doctest test case (so a failure names its case).
function(dlf_add_test_suite floor)
  file(GLOB _src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${floor}/*.cpp)
  set(target test_${floor})
  add_executable(${target} ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp ${_src})
  target_link_libraries(${target} PRIVATE dlf::dlf doctest::doctest ZLIB::ZLIB)  # zlib: IDX test files
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests)
  dlf_project_flags(${target})
  include(${doctest_DIR}/doctest.cmake OPTIONAL RESULT_VARIABLE _doctest_cmake)
  if(_doctest_cmake)
    doctest_discover_tests(${target} TEST_PREFIX "${floor}: ")
  else()
    add_test(NAME ${target} COMMAND ${target})
  endif()
endfunction()
