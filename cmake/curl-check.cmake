# cmake/curl-check.cmake - the build/lean_curl test: with the lean libcurl,
# the gpuop binary maps none of the shared libraries Debian's libcurl.so
# brings, and (with scripts/lean-curl's BUILDINFO) it runs on the OpenSSL
# BUILDINFO names, which the test prints. Included after the gpuop target
# exists.
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
  # With a BUILDINFO (scripts/lean-curl's prefix): the OpenSSL the binary
  # reports at run time (`gpuop version`) is the one BUILDINFO says was
  # built, and the test says which that is, and which was wanted.
  set(_bi_check "")
  if(GPUOP_CURL_BUILDINFO AND EXISTS "${GPUOP_CURL_BUILDINFO}")
    set(_bi_check "built=$(sed -n 's/^openssl //p' \"$2\"); wanted=$(sed -n 's/^openssl-wanted //p' \"$2\"); \
tls=$(\"$1\" version | sed -n 's/^TLS //p'); \
echo \"linked: $tls (BUILDINFO: OpenSSL $built built, $wanted wanted)\"; \
[ \"$tls\" = \"OpenSSL/\${built%%-*}\" ] || { echo \"gpuop links $tls, BUILDINFO says $built\"; exit 1; }; \
[ \"$built\" = \"$wanted\" ] || echo \"warning: OpenSSL $built is linked, not $wanted: rerun scripts/lean-curl\"; ")
  endif()
  add_test(NAME build/lean_curl COMMAND sh -c
           "${_bi_check}ldd \"$1\" | grep -E 'libcurl|gnutls|krb5|ldap|ssh2|nghttp2|rtmp|idn2|psl' && exit 1; ${_ssl_check}"
           sh $<TARGET_FILE:gpuop> "${GPUOP_CURL_BUILDINFO}")
  set_tests_properties(build/lean_curl PROPERTIES LABELS "unit;build" TIMEOUT 30)
endif()
