# cmake/deps.cmake - jansson, libyaml and libuv as the INTERFACE targets
# gpuop_jansson, gpuop_libyaml and gpuop_libuv. Included once from the
# top-level CMakeLists.txt before the sources.
#
# By default the shared libraries pkg-config names. With GPUOP_STATIC their
# static archives, linked by path: CMake links what pkg-config names by the
# full path of the .so, so -static in the link flags alone cannot work.
# Debian ships libjansson.a, libyaml.a and libuv's archive as libuv_a.a
# (its libuv-static.pc says -luv_a, and what libuv needs besides: pthread,
# dl, rt).
find_package(PkgConfig REQUIRED)
foreach(_lib jansson libyaml libuv)
  add_library(gpuop_${_lib} INTERFACE)
endforeach()

if(NOT GPUOP_STATIC)
  pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
  pkg_check_modules(LIBYAML REQUIRED IMPORTED_TARGET yaml-0.1)
  pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv)
  target_link_libraries(gpuop_jansson INTERFACE PkgConfig::JANSSON)
  target_link_libraries(gpuop_libyaml INTERFACE PkgConfig::LIBYAML)
  target_link_libraries(gpuop_libuv INTERFACE PkgConfig::LIBUV)
  return()
endif()

# gpuop_static_dep(TARGET PREFIX MODULE DEVPKG): every library of
# `pkg-config --static --libs MODULE` as its lib<name>.a, found in the
# module's library folders or the system's; a missing one is a configure
# error naming the Debian package to install.
function(gpuop_static_dep target prefix module devpkg)
  pkg_check_modules(${prefix} REQUIRED ${module})
  set(_paths)
  foreach(_name IN LISTS ${prefix}_STATIC_LIBRARIES)
    find_library(_a NAMES lib${_name}.a HINTS ${${prefix}_STATIC_LIBRARY_DIRS} NO_CACHE)
    if(NOT _a)
      message(FATAL_ERROR "GPUOP_STATIC: no lib${_name}.a for ${module} (install ${devpkg})")
    endif()
    list(APPEND _paths "${_a}")
    unset(_a)
  endforeach()
  target_include_directories(${target} INTERFACE ${${prefix}_STATIC_INCLUDE_DIRS})
  target_link_libraries(${target} INTERFACE ${_paths})
  message(STATUS "${module}: static, ${_paths}")
endfunction()

gpuop_static_dep(gpuop_jansson JANSSON jansson libjansson-dev)
gpuop_static_dep(gpuop_libyaml LIBYAML yaml-0.1 libyaml-dev)
gpuop_static_dep(gpuop_libuv LIBUV libuv-static libuv1-dev)
