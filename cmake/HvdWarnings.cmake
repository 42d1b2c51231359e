# hvd_set_warnings(<target>): the project's warning set; -Werror when HVD_WERROR (CI) is on.
function(hvd_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(HVD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# hvd_hot_sources(<source>...): HVD_HOT_FLAGS (CMakeLists.txt) on these sources of the calling
# folder's targets, after any options they already have.
function(hvd_hot_sources)
  if(NOT HVD_HOT_FLAGS)
    return()
  endif()
  separate_arguments(flags UNIX_COMMAND "${HVD_HOT_FLAGS}")
  foreach(source ${ARGN})
    set_property(SOURCE ${source} APPEND PROPERTY COMPILE_OPTIONS ${flags})
  endforeach()
endfunction()

# hvd_apply_sanitizers(): HVD_SANITIZE's flags for every target of the build (libraries,
# binaries, tests alike: a sanitizer needs the whole program instrumented and linked with it).
# HVD_SANITIZE_FLAG is what a source file can switch off again (see runtime/transports).
function(hvd_apply_sanitizers)
  string(TOLOWER "${HVD_SANITIZE}" mode)
  if(mode STREQUAL "" OR mode STREQUAL "off" OR mode STREQUAL "0" OR mode STREQUAL "false")
    set(HVD_SANITIZE_FLAG "" PARENT_SCOPE)
    return()
  elseif(mode STREQUAL "on" OR mode STREQUAL "1" OR mode STREQUAL "true" OR mode STREQUAL "address")
    set(flag -fsanitize=address,undefined)
  elseif(mode STREQUAL "thread")
    set(flag -fsanitize=thread)
  else()
    message(FATAL_ERROR "HVD_SANITIZE=${HVD_SANITIZE}: expected OFF, ON, address or thread")
  endif()
  # Not for CUDA sources: nvcc compiles the one kernel file (scale_kernels.cu) with the host's
  # gcc, which runs no sanitizer code there; its host side is a launch, nothing to instrument.
  add_compile_options("$<$<NOT:$<COMPILE_LANGUAGE:CUDA>>:${flag};-fno-omit-frame-pointer>")
  add_link_options(${flag})
  set(HVD_SANITIZE_FLAG "${flag}" PARENT_SCOPE)
  message(STATUS "hvd sanitizers: ${flag}")
endfunction()
