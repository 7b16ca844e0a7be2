# cmake/curl-check.cmake - the build/lean_curl test: with the lean libcurl,
# the gpuop binary maps none of the shared libraries Debian's libcurl.so
# brings. Included after the gpuop target exists.
if(GPUOP_CURL_PKGCONFIG)
  # The point of the static libcurl: none of the shared libraries Debian's
  # libcurl.so.4 brings may be mapped by the binary.
  # With GPUOP_STATIC_OPENSSL, libssl and libcrypto may not be mapped either;
  # with the lean OpenSSL from scripts/lean-curl, none of the algorithms it
  # leaves out may be linked in (a full libcrypto.a brings DES and Camellia).
  if(GPUOP_STATIC_OPENSSL AND _libssl STREQUAL "${_libdir}/libssl.a")
    set(_ssl_check "ldd \"$1\" | grep -E 'libssl|libcrypto' && exit 1; \
nm \"$1\" | grep -E ' [Tt] (DES|Camellia|BF|RC4)_' && exit 1; exit 0")
  elseif(GPUOP_STATIC_OPENSSL)
    set(_ssl_check "ldd \"$1\" | grep -E 'libssl|libcrypto' && exit 1; exit 0")
  else()
    set(_ssl_check "ldd \"$1\" | grep -q libssl")
  endif()
  add_test(NAME build/lean_curl COMMAND sh -c
           "ldd \"$1\" | grep -E 'libcurl|gnutls|krb5|ldap|ssh2|nghttp2|rtmp|idn2|psl' && exit 1; ${_ssl_check}"
           sh $<TARGET_FILE:gpuop>)
  set_tests_properties(build/lean_curl PROPERTIES LABELS "unit;build" TIMEOUT 30)
endif()
