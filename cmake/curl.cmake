# cmake/curl.cmake - the gpuop_curl interface target: the system libcurl, or
# (GPUOP_CURL_PKGCONFIG) the lean static libcurl and OpenSSL that
# scripts/lean-curl builds, linked by archive path. Included once from the
# top-level CMakeLists.txt before the sources.
# libcurl: the system's shared one by default. With GPUOP_CURL_PKGCONFIG, the
# static archive that .pc file describes plus what it says the archive needs
# (libssl, libcrypto): gpuop then maps no libcurl.so and none of the
# libraries Debian's libcurl.so pulls in. pkg-config runs at each configure
# (not cached) so changing the directory takes effect.
add_library(gpuop_curl INTERFACE)
if(GPUOP_CURL_PKGCONFIG)
  set(_pc ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${GPUOP_CURL_PKGCONFIG}" ${PKG_CONFIG_EXECUTABLE})
  execute_process(COMMAND ${_pc} --variable=pcfiledir libcurl OUTPUT_VARIABLE _pcdir
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT EXISTS "${GPUOP_CURL_PKGCONFIG}/libcurl.pc")
    message(FATAL_ERROR "GPUOP_CURL_PKGCONFIG=${GPUOP_CURL_PKGCONFIG}: no libcurl.pc there")
  endif()
  execute_process(COMMAND ${_pc} --variable=libdir libcurl OUTPUT_VARIABLE _libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${_pc} --static --cflags libcurl OUTPUT_VARIABLE _cflags OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${_pc} --static --libs libcurl OUTPUT_VARIABLE _libs OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT EXISTS "${_libdir}/libcurl.a" OR EXISTS "${_libdir}/libcurl.so")
    message(FATAL_ERROR "${GPUOP_CURL_PKGCONFIG}/libcurl.pc: ${_libdir} must hold libcurl.a and no libcurl.so")
  endif()
  separate_arguments(_cflags UNIX_COMMAND "${_cflags}")
  separate_arguments(_libs UNIX_COMMAND "${_libs}")
  set(_link "${_libdir}/libcurl.a")
  foreach(_f IN LISTS _libs)
    if(_f MATCHES "^-L" OR _f STREQUAL "-lcurl")
      continue() # the archive above, by its path, so no libcurl.so can win
    endif()
    list(APPEND _link "${_f}")
  endforeach()
  list(REMOVE_DUPLICATES _link)
  # OpenSSL linked statically as well: only the code curl calls is mapped,
  # where libcrypto.so's initialisation alone faults in about 4 MB of file
  # pages. The system's libssl.a and libcrypto.a (libssl-dev: Debian's
  # current OpenSSL, which scripts/lean-curl installs), or a prefix's own
  # (the lean OpenSSL older versions of scripts/lean-curl built from
  # source). Security updates of OpenSSL then need a rebuild, as curl's do.
  if(GPUOP_STATIC_OPENSSL)
    if(EXISTS "${_libdir}/libssl.a" AND EXISTS "${_libdir}/libcrypto.a")
      set(_libssl "${_libdir}/libssl.a")
      set(_libcrypto "${_libdir}/libcrypto.a")
    else()
      find_library(GPUOP_LIBSSL_A NAMES libssl.a REQUIRED)
      find_library(GPUOP_LIBCRYPTO_A NAMES libcrypto.a REQUIRED)
      set(_libssl "${GPUOP_LIBSSL_A}")
      set(_libcrypto "${GPUOP_LIBCRYPTO_A}")
    endif()
    list(TRANSFORM _link REPLACE "^-lssl$" "${_libssl}")
    list(TRANSFORM _link REPLACE "^-lcrypto$" "${_libcrypto}")
    list(APPEND _link ${CMAKE_DL_LIBS})
  endif()
  foreach(_f IN LISTS _cflags)
    if(_f MATCHES "^-I(.*)")
      target_include_directories(gpuop_curl INTERFACE "${CMAKE_MATCH_1}")
    elseif(_f MATCHES "^-D(.*)")
      target_compile_definitions(gpuop_curl INTERFACE "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  find_package(Threads REQUIRED)
  target_link_libraries(gpuop_curl INTERFACE ${_link} Threads::Threads)
  message(STATUS "libcurl: static, ${_libdir}/libcurl.a with ${_link}")
  # scripts/lean-curl records what it built in the prefix's BUILDINFO
  # ("curl V", "openssl V": the libssl-dev it was built with). When
  # libssl-dev has changed since (apt upgraded it), the binary links the
  # new libssl.a with a libcurl built on the old headers: said at every
  # configure, until a rerun of scripts/lean-curl builds the new prefix.
  get_filename_component(GPUOP_CURL_PREFIX "${_libdir}/.." ABSOLUTE)
  set(GPUOP_CURL_BUILDINFO "${GPUOP_CURL_PREFIX}/BUILDINFO")
  if(EXISTS "${GPUOP_CURL_BUILDINFO}")
    file(STRINGS "${GPUOP_CURL_BUILDINFO}" _bi)
    set(_ossl "")
    foreach(_l IN LISTS _bi)
      if(_l MATCHES "^openssl ([^ ]+)$")
        set(_ossl "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    execute_process(COMMAND dpkg-query -W -f=\${Version} libssl-dev OUTPUT_VARIABLE _ossl_dpkg
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    message(STATUS "libcurl: lean build of ${GPUOP_CURL_PREFIX}: OpenSSL ${_ossl} "
                   "(libssl-dev installed: ${_ossl_dpkg})")
    if(_ossl_dpkg AND NOT _ossl STREQUAL _ossl_dpkg)
      message(WARNING "${GPUOP_CURL_PREFIX} was built with OpenSSL ${_ossl}, and libssl-dev "
                      "${_ossl_dpkg} is installed: rerun scripts/lean-curl and configure with "
                      "the directory it prints")
    endif()
  endif()
else()
  pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
  target_link_libraries(gpuop_curl INTERFACE PkgConfig::CURL)
  message(STATUS "libcurl: the system's, ${CURL_LINK_LIBRARIES}")
endif()
