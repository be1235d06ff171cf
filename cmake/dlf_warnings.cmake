# Flags for project code only (dependencies' headers are SYSTEM includes).
function(dlf_project_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  if(DLF_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
endfunction()
