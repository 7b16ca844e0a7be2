# cmake/curl-check.cmake - the build/lean_curl test: with the lean libcurl,
# the gpuop binary maps none of the shared libraries Debian's libcurl.so
# brings, and (with scripts/lean-curl's BUILDINFO) it runs on the OpenSSL
# BUILDINFO names, which is the libssl-dev installed; the test prints
# both. Included after the gpuop target exists.
if(GPUOP_CURL_PKGCONFIG)
  # The point of the static libcurl: none of the shared libraries Debian's
  # libcurl.so.4 brings may be mapped by the binary.
  # With GPUOP_STATIC_OPENSSL, libssl and libcrypto may not be mapped either;
  # with a lean OpenSSL in the prefix (older scripts/lean-curl built one),
  # none of the algorithms it leaves out may be linked in (a full
  # libcrypto.a brings DES and Camellia).
  if(GPUOP_STATIC_OPENSSL AND _libssl STREQUAL "${_libdir}/libssl.a")
    set(_ssl_check "ldd \"$1\" | grep -E 'libssl|libcrypto' && exit 1; \
nm \"$1\" | grep -E ' [Tt] (DES|Camellia|BF|RC4)_' && exit 1; exit 0")
  elseif(GPUOP_STATIC_OPENSSL)
    set(_ssl_check "ldd \"$1\" | grep -E 'libssl|libcrypto' && exit 1; exit 0")
  else()
    set(_ssl_check "ldd \"$1\" | grep -q libssl")
  endif()
  # With a BUILDINFO (scripts/lean-curl's prefix): the OpenSSL the binary
  # reports at run time (`gpuop version`) is the one BUILDINFO names, and
  # (with the system's libssl.a) the libssl-dev installed now; the test
  # says which.
  set(_bi_check "")
  if(GPUOP_CURL_BUILDINFO AND EXISTS "${GPUOP_CURL_BUILDINFO}")
    set(_bi_check "built=$(sed -n 's/^openssl //p' \"$2\"); \
dpkg=$(dpkg-query -W -f='\${Version}' libssl-dev 2>/dev/null); \
tls=$(\"$1\" version | sed -n 's/^TLS //p'); \
echo \"linked: $tls (BUILDINFO: OpenSSL $built; libssl-dev installed: $dpkg)\"; \
[ \"$tls\" = \"OpenSSL/\${built%%-*}\" ] || { echo \"gpuop links $tls, BUILDINFO says $built\"; exit 1; }; \
[ -f \"\${2%/BUILDINFO}/lib/libssl.a\" ] || [ -z \"$dpkg\" ] || [ \"$built\" = \"$dpkg\" ] || \
{ echo \"libssl-dev $dpkg is installed, gpuop links $built: rerun scripts/lean-curl\"; exit 1; }; ")
  endif()
  add_test(NAME build/lean_curl COMMAND sh -c
           "${_bi_check}ldd \"$1\" | grep -E 'libcurl|gnutls|krb5|ldap|ssh2|nghttp2|rtmp|idn2|psl' && exit 1; ${_ssl_check}"
           sh $<TARGET_FILE:gpuop> "${GPUOP_CURL_BUILDINFO}")
  set_tests_properties(build/lean_curl PROPERTIES LABELS "unit;build" TIMEOUT 30)
endif()
