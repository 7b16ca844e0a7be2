# cmake/static.cmake - GPUOP_STATIC: the gpuop executable linked as a static
# PIE (no program interpreter, no shared library, ASLR kept; plain -static
# where the toolchain cannot), the build/static test proving it runs in an
# empty root, and build/image, the container image made of it
# (test/build/image.sh). Included after the gpuop target exists.
#
# glibc warns at link time that getaddrinfo and getpwuid_r want its shared
# NSS modules at run time. Without them a name in /etc/hosts still resolves
# (checked in an empty root), and in a cluster gpuop connects to
# KUBERNETES_SERVICE_HOST, an address; libuv's getpwuid_r is never called.
# Debian's libcrypto.a adds two: dlopen (its loader of engines and
# provider modules an openssl.cnf names: Debian's names none, and the image
# has no openssl.cnf at all) and gethostbyname (BIO's own address lookup,
# which curl, resolving names itself, never calls).
if(NOT GPUOP_STATIC)
  return()
endif()
include(CheckLinkerFlag)
check_linker_flag(C "-static-pie" GPUOP_HAVE_STATIC_PIE)
if(GPUOP_HAVE_STATIC_PIE)
  target_link_options(gpuop PRIVATE -static-pie)
else()
  target_link_options(gpuop PRIVATE -static)
endif()

# The binary's layout: the library code gpuop runs linked first. The kernel
# maps a file's pages 64 KiB around each page a process faults on (fault-
# around), so code run once, scattered through 2 MB of libcrypto and 0.8 MB
# of libc, keeps nearly every page of them resident: 4.5 MiB of file-backed
# RSS for 4.3 MB of text. cmake/hot-text.txt names the archive members
# holding what a profiled run executed (test/bench/hot-text makes it);
# they are extracted from their archives at build time and linked as object
# files ahead of everything else, so GNU ld lays their code (and their
# rodata) out first and together, and the members never run stay in the
# archives, linked where they were. A member the list names that an archive
# no longer has (a library upgraded) is left out, said at configure; the
# test build/hot-text checks the layout in the link map.
option(GPUOP_HOT_TEXT "Link the library code gpuop runs first (cmake/hot-text.txt)" ON)
set(_hot_list ${CMAKE_SOURCE_DIR}/cmake/hot-text.txt)
set(_map ${CMAKE_BINARY_DIR}/gpuop.map)
target_link_options(gpuop PRIVATE "LINKER:-Map=${_map}")
if(GPUOP_HOT_TEXT)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_hot_list})
  # The archives gpuop links, by file name: the dependencies' and libc's.
  set(_archives)
  foreach(_t gpuop_curl gpuop_jansson gpuop_libyaml gpuop_libuv)
    get_target_property(_libs ${_t} INTERFACE_LINK_LIBRARIES)
    foreach(_l IN LISTS _libs)
      if(_l MATCHES "\\.a$" AND EXISTS "${_l}")
        list(APPEND _archives "${_l}")
      endif()
    endforeach()
  endforeach()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libc.a OUTPUT_VARIABLE _libc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND _archives "${_libc}")
  file(STRINGS ${_hot_list} _lines REGEX "^[^#]")
  set(_hot_objs)
  set(_missing 0)
  foreach(_a IN LISTS _archives)
    get_filename_component(_name "${_a}" NAME)
    string(REPLACE "." "\\." _re "${_name}")
    set(_want)
    foreach(_line IN LISTS _lines)
      if(_line MATCHES "^${_re} (.+)$")
        list(APPEND _want "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    if(NOT _want)
      continue()
    endif()
    execute_process(COMMAND ${CMAKE_AR} t "${_a}" OUTPUT_VARIABLE _have)
    string(REPLACE "\n" ";" _have "${_have}")
    set(_members)
    set(_objs)
    foreach(_m IN LISTS _want)
      if(_m IN_LIST _have)
        list(APPEND _members "${_m}")
        list(APPEND _objs "${CMAKE_BINARY_DIR}/hot/${_name}/${_m}")
      else()
        math(EXPR _missing "${_missing} + 1")
      endif()
    endforeach()
    add_custom_command(OUTPUT ${_objs}
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/hot/${_name}
                       COMMAND ${CMAKE_AR} x --output ${CMAKE_BINARY_DIR}/hot/${_name} "${_a}" ${_members}
                       DEPENDS "${_a}" ${_hot_list}
                       COMMENT "Extracting the ${_name} members gpuop runs (cmake/hot-text.txt)")
    list(APPEND _hot_objs ${_objs})
  endforeach()
  # The commands belong to this directory, the executable to src/cmd: a
  # target here runs them, and the objects are marked in gpuop's directory.
  add_custom_target(gpuop_hot_text DEPENDS ${_hot_objs})
  add_dependencies(gpuop gpuop_hot_text)
  set_source_files_properties(${_hot_objs} TARGET_DIRECTORY gpuop PROPERTIES EXTERNAL_OBJECT TRUE
                                                                             GENERATED TRUE)
  target_sources(gpuop PRIVATE ${_hot_objs})
  list(LENGTH _hot_objs _n)
  message(STATUS "hot text: ${_n} archive members linked first, ${_missing} listed ones missing "
                 "from their archives (test/bench/hot-text makes the list again)")
  add_test(NAME build/hot-text COMMAND python3 ${CMAKE_SOURCE_DIR}/test/bench/hot_text.py check ${_map}
                                       ${_hot_list})
  set_tests_properties(build/hot-text PROPERTIES LABELS "unit;build" TIMEOUT 60)
endif()

add_test(NAME build/static COMMAND bash ${CMAKE_SOURCE_DIR}/test/build/static.sh
         $<TARGET_FILE:gpuop> ${PROJECT_VERSION} ${CMAKE_SOURCE_DIR}/deploy/sample-gpupolicy.yaml)
set_tests_properties(build/static PROPERTIES LABELS "unit;build" TIMEOUT 60 SKIP_RETURN_CODE 77)

# The image scripts/image builds from this binary (root: buildah, chroot).
add_test(NAME build/image COMMAND bash ${CMAKE_SOURCE_DIR}/test/build/image.sh
         $<TARGET_FILE:gpuop> ${PROJECT_VERSION})
set_tests_properties(build/image PROPERTIES LABELS build TIMEOUT 600 SKIP_RETURN_CODE 77)

# Where the binary is, for scripts/image.
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/gpuop-path CONTENT "$<TARGET_FILE:gpuop>\n")
