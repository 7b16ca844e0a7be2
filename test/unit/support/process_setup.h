/*
 * process_setup.h - what a test program that makes Kubernetes clients
 * must do once, as gpuop's main does (src/cmd/main.c; kube.h says why):
 * curl_global_init before any thread, SIGPIPE ignored. Its group setup
 * and teardown: cmocka_run_group_tests(tests, process_setup,
 * process_teardown).
 */
#ifndef GPUOP_TEST_PROCESS_SETUP_H
#define GPUOP_TEST_PROCESS_SETUP_H

#include <signal.h>
#include <curl/curl.h>

static inline int process_setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static inline int process_teardown(void **state)
{
    (void)state;
    curl_global_cleanup();
    return 0;
}

#endif
