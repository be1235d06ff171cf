# Flags for project code only (dependencies' headers are SYSTEM includes).
function(dlf_project_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  if(CMAKE_CXX_COMPILER_ID MATCHES Clang)  # the fuzz preset: GCC pragmas, unvectorised simd
    target_compile_options(${target} PRIVATE -Wno-unknown-warning-option -Wno-pass-failed)
  endif()
  if(DLF_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  # No errno from math functions (dlf never reads it): std::sqrt becomes the instruction, with
  # the same correctly rounded result, and loops that take a square root vectorise (AdamW's
  # update was scalar: "control flow in loop", the errno branch).
  target_compile_options(${target} PRIVATE -fno-math-errno)
  # Nor floating-point exception flags (dlf never reads those either): a comparison that picks a
  # value may then be evaluated for every lane, so clamps vectorise. exp_vectorizable's clamp kept
  # every loop over exp scalar ("control flow in loop": silu, sigmoid, GroupNorm + SiLU) at 4-8 ns
  # an element; 0.8 with this. Results are the same bits: only exceptions' flags are given up.
  target_compile_options(${target} PRIVATE -fno-trapping-math)
  # GCC 12.2's SLP vectorizer, with AVX, builds a by-value struct argument passed on the stack
  # wrongly (Conv2dOptions{} reached Conv2d with padding {1, 0}: tests/nn/module_test.cpp
  # catches it; clang and -O3 without -march=native are right).
  if(CMAKE_CXX_COMPILER_ID STREQUAL GNU AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -fno-tree-slp-vectorize)
  endif()
endfunction()
