# Flags for project code only (dependencies' headers are SYSTEM includes).
function(dlf_project_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  if(CMAKE_CXX_COMPILER_ID MATCHES Clang)  # the fuzz preset: GCC pragmas, unvectorised simd
    target_compile_options(${target} PRIVATE -Wno-unknown-warning-option -Wno-pass-failed)
  endif()
  if(DLF_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
endfunction()
