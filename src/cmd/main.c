/*
 * main.c - command-line entry: the process-wide setup, once, then the
 * subcommands. Only wiring lives here; each command is implemented in its
 * own module.
 *
 * Process-wide setup the kube layer requires (kube.h) and never does
 * itself: curl_global_init before any thread exists (libcurl's rule; the
 * threaded resolver starts threads later), and SIGPIPE ignored, so a peer
 * that closes its socket mid-write costs a request, not the process. Done
 * for every command: the cost is OpenSSL's initialisation, once.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "cli_int.h"

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "gpuop: libcurl cannot be initialised (curl_global_init)\n");
        return 1;
    }
    int rc = gpuop_cli_main(argc, argv);
    curl_global_cleanup();
    return rc;
}
