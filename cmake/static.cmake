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

add_test(NAME build/static COMMAND bash ${CMAKE_SOURCE_DIR}/test/build/static.sh
         $<TARGET_FILE:gpuop> ${PROJECT_VERSION} ${CMAKE_SOURCE_DIR}/deploy/sample-gpupolicy.yaml)
set_tests_properties(build/static PROPERTIES LABELS "unit;build" TIMEOUT 60 SKIP_RETURN_CODE 77)

# The image scripts/image builds from this binary (root: buildah, chroot).
add_test(NAME build/image COMMAND bash ${CMAKE_SOURCE_DIR}/test/build/image.sh
         $<TARGET_FILE:gpuop> ${PROJECT_VERSION})
set_tests_properties(build/image PROPERTIES LABELS build TIMEOUT 600 SKIP_RETURN_CODE 77)

# Where the binary is, for scripts/image.
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/gpuop-path CONTENT "$<TARGET_FILE:gpuop>\n")
