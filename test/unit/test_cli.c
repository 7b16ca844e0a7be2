/*
 * test_cli.c - the command table (cli.h): the getopt options it builds
 * parse every flag of check and completion, run and render accept every
 * flag their rows list (so the completion scripts offer nothing they
 * reject), durations parse as documented, the plugin name is seen, and
 * the __complete answer kubectl reads from kubectl_complete-gpuop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/error.h"

static void test_getopt_from_the_table(void **state)
{
    (void)state;
    const struct gpuop_cli_command *c = gpuop_cli_command("check");
    assert_non_null(c);
    struct option opts[32];
    char shortopts[32];
    assert_int_equal(gpuop_cli_getopt(c, opts, 32, shortopts, sizeof(shortopts)), 0);
    size_t n = 0;
    for (const struct gpuop_cli_flag *fl = c->flags; fl->name; fl++, n++) {
        assert_string_equal(opts[n].name, fl->name);
        assert_int_equal(opts[n].has_arg, fl->arg);
        assert_ptr_equal(gpuop_cli_flag_of(c, opts[n].val), fl);
    }
    assert_null(opts[n].name);
    assert_string_equal(shortopts, "n:o:h");
    assert_null(gpuop_cli_flag_of(c, '?'));
    /* too small: an error, not an overflow */
    assert_int_equal(gpuop_cli_getopt(c, opts, 3, shortopts, sizeof(shortopts)), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_cli_getopt(c, opts, 32, shortopts, 2), GPUOP_ETOOBIG);
    /* the flags check needs for kubectl */
    const char *want[] = {"kubeconfig", "context", "namespace", "request-timeout", "output"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        bool found = false;
        for (const struct gpuop_cli_flag *fl = c->flags; fl->name; fl++)
            found |= !strcmp(fl->name, want[i]);
        assert_true(found);
    }
}

/* A value a flag takes without complaint: the first of its words, a
 * duration, an address, or any word. */
static const char *sample(const struct gpuop_cli_flag *fl, char *buf, size_t size)
{
    if (fl->values && fl->values[0] != '@') {
        size_t n = strcspn(fl->values, " ");
        snprintf(buf, size, "%.*s", (int)n, fl->values);
    } else if (fl->meta && !strcmp(fl->meta, "D")) {
        snprintf(buf, size, "2s");
    } else if (fl->meta && !strcmp(fl->meta, "ADDR")) {
        snprintf(buf, size, "127.0.0.1:0");
    } else {
        snprintf(buf, size, "x");
    }
    return buf;
}

/* Every flag of every command, with a value, then --help: the command
 * must parse the flag and then answer the help with 0 (an unknown flag
 * would be a usage error, 2). */
static void test_every_listed_flag_is_parsed(void **state)
{
    (void)state;
    size_t n;
    const struct gpuop_cli_command *cmds = gpuop_cli_commands(&n);
    assert_true(n >= 5);
    FILE *saved = stdout;
    for (size_t i = 0; i < n; i++) {
        const struct gpuop_cli_command *c = &cmds[i];
        for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++) {
            if (!strcmp(fl->name, "help"))
                continue;
            char flag[96], val[64];
            char *argv[5];
            int argc = 0;
            argv[argc++] = (char *)c->name;
            if (fl->arg == optional_argument) {
                snprintf(flag, sizeof(flag), "--%s=%s", fl->name, sample(fl, val, sizeof(val)));
                argv[argc++] = flag;
            } else {
                snprintf(flag, sizeof(flag), "--%s", fl->name);
                argv[argc++] = flag;
                if (fl->arg == required_argument)
                    argv[argc++] = (char *)sample(fl, val, sizeof(val));
            }
            argv[argc++] = "--help";
            argv[argc] = NULL;
            stdout = fopen("/dev/null", "w");
            int rc = c->run(argc, argv);
            fclose(stdout);
            stdout = saved;
            if (rc != 0)
                fail_msg("%s %s: exit %d", c->name, flag, rc);
        }
    }
}

static void test_durations(void **state)
{
    (void)state;
    uint64_t ms = 7;
    assert_int_equal(gpuop_cli_duration("1500ms", 0, &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(gpuop_cli_duration("15s", 0, &ms), 0);
    assert_int_equal(ms, 15000);
    assert_int_equal(gpuop_cli_duration("2m", 0, &ms), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(gpuop_cli_duration("1h", 0, &ms), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(gpuop_cli_duration("2.5", 0, &ms), 0);
    assert_int_equal(ms, 2500);
    /* kubectl's "0": no timeout, where allowed */
    assert_int_equal(gpuop_cli_duration("0", 1, &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(gpuop_cli_duration("0s", 1, &ms), 0);
    assert_int_equal(gpuop_cli_duration("0", 0, &ms), GPUOP_EINVAL);
    const char *bad[] = {"", "s", "-1s", "1d", "nan", "inf", "1e300", "10x", "1 s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gpuop_cli_duration(bad[i], 1, &ms), GPUOP_EINVAL);
    assert_int_equal(gpuop_cli_duration(NULL, 1, &ms), GPUOP_EINVAL);
}

static void test_plugin_name(void **state)
{
    (void)state;
    char *argv[] = {"/usr/local/bin/kubectl-gpuop", "version", NULL};
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    assert_int_equal(gpuop_cli_main(2, argv), 0);
    fclose(stdout);
    stdout = saved;
    assert_string_equal(gpuop_cli_program(), "kubectl gpuop");
    char *bad[] = {"kubectl-gpuop", "nosuch", NULL};
    FILE *saved_err = stderr;
    stderr = fopen("/dev/null", "w");
    assert_int_equal(gpuop_cli_main(2, bad), 2);
    fclose(stderr);
    stderr = saved_err;
}

/* gpuop --help: every command's name stands apart from its summary by at
 * least two spaces, and the summaries start in one column, whatever the
 * longest name ("release-policy" once ran into its summary). */
static void test_usage_columns(void **state)
{
    (void)state;
    char *argv[] = {"gpuop", "--help", NULL};
    FILE *saved = stdout, *tmp = tmpfile();
    assert_non_null(tmp);
    stdout = tmp;
    assert_int_equal(gpuop_cli_main(2, argv), 0);
    stdout = saved;
    rewind(tmp);
    char line[512];
    int column = -1, rows = 0;
    bool in_commands = false;
    while (fgets(line, sizeof(line), tmp)) {
        if (!strcmp(line, "commands:\n")) {
            in_commands = true;
            continue;
        }
        if (!in_commands || strncmp(line, "  ", 2) != 0)
            continue;
        const char *name = line + 2;
        size_t n = strcspn(name, " ");
        char cmd[64];
        assert_true(n < sizeof(cmd));
        memcpy(cmd, name, n);
        cmd[n] = '\0';
        if (!gpuop_cli_command(cmd))
            fail_msg("not a command in the usage: '%s' (%s)", cmd, line);
        size_t gap = strspn(name + n, " ");
        if (gap < 2)
            fail_msg("name and summary run together: %s", line);
        int at = (int)(2 + n + gap);
        if (column >= 0 && at != column)
            fail_msg("summary at column %d, not %d: %s", at, column, line);
        column = at;
        rows++;
    }
    fclose(tmp);
    assert_true(rows >= 5);
}

/* gpuop __complete WORDS...: what kubectl_complete-gpuop prints. */
static char *complete(int n, char **words)
{
    static char out[4096];
    char *argv[16];
    argv[0] = "__complete";
    for (int i = 0; i < n; i++)
        argv[i + 1] = words[i];
    argv[n + 1] = NULL;
    FILE *saved = stdout, *tmp = tmpfile();
    assert_non_null(tmp);
    stdout = tmp;
    assert_int_equal(gpuop_cmd_complete(n + 1, argv), 0);
    stdout = saved;
    rewind(tmp);
    size_t len = fread(out, 1, sizeof(out) - 1, tmp);
    out[len] = '\0';
    fclose(tmp);
    return out;
}

static void test_complete_protocol(void **state)
{
    (void)state;
    char *w1[] = {"ch"};
    assert_string_equal(complete(1, w1), "check\tone-shot report of every GPU node\n:4\n");
    char *w2[] = {"check", "-o", ""};
    assert_string_equal(complete(3, w2), "text\nwide\njson\nyaml\n:4\n");
    char *w3[] = {"check", "--output=j"};
    assert_string_equal(complete(2, w3), "--output=json\n:4\n");
    char *w4[] = {"check", "--req"};
    assert_non_null(strstr(complete(2, w4), "--request-timeout\t"));
    char *w5[] = {"check", "--policy", ""};
    assert_string_equal(complete(3, w5), ":0\n"); /* files: the shell's own */
    char *w6[] = {"completion", ""};
    assert_string_equal(complete(2, w6), "bash\nzsh\n:4\n");
    char *w7[] = {"run", "--leader-elect=f"};
    assert_string_equal(complete(2, w7), "--leader-elect=false\n:4\n");
    char *w8[] = {"nosuch", ""};
    assert_string_equal(complete(2, w8), ":4\n");
    char *w9[] = {"check", "--nodes", ""}; /* free text */
    assert_string_equal(complete(3, w9), ":4\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_getopt_from_the_table),
        cmocka_unit_test(test_every_listed_flag_is_parsed),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_plugin_name),
        cmocka_unit_test(test_usage_columns),
        cmocka_unit_test(test_complete_protocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
