/*
 * completion.c - `gpuop completion bash|zsh`: prints a shell completion
 * script written from the command table (cli_int.h), so every command, flag
 * and value list the CLI parses completes, and nothing else does. The
 * scripts complete both `gpuop` and `kubectl-gpuop`.
 *
 *   bash: source <(gpuop completion bash)
 *   zsh:  gpuop completion zsh > "${fpath[1]}/_gpuop"   (or source it)
 *
 * kubectl's own completion of a plugin (kubectl 1.26+) runs an executable
 * named kubectl_complete-gpuop with the words after `kubectl gpuop` and
 * reads cobra's __complete answer: one candidate a line, then
 * ":<directive>". The same binary under that name (or `gpuop __complete
 * WORDS...`) answers from the same table (gpuop_cmd_complete).
 *
 * Values: a word list completes from the list, GPUOP_CLI_FILE a file name,
 * GPUOP_CLI_CONTEXT the contexts of `kubectl config get-contexts`,
 * GPUOP_CLI_NAMESPACE the cluster's namespaces (through kubectl, with the
 * --kubeconfig and --context already on the line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_int.h"
#include "cmd_int.h"

/* ---- bash ---- */

static void bash_flag_words(FILE *o, const struct gpuop_cli_command *c)
{
    for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++) {
        fprintf(o, " --%s%s", fl->name, fl->arg == optional_argument ? "=" : "");
        if (fl->shrt)
            fprintf(o, " -%c", fl->shrt);
    }
}

static void bash_script(FILE *o)
{
    size_t n;
    const struct gpuop_cli_command *cmds = gpuop_cli_commands(&n);
    fputs("# bash completion for gpuop and kubectl-gpuop, written by `gpuop completion bash`\n"
          "# from gpuop's command table. Use: source <(gpuop completion bash)\n\n"
          "# _gpuop_kubectl ARGS: kubectl with the --kubeconfig and --context of the line\n"
          "_gpuop_kubectl() {\n"
          "    local i w a=()\n"
          "    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do\n"
          "        w=${COMP_WORDS[i]}\n"
          "        case $w in --kubeconfig | --context)\n"
          "            if [[ ${COMP_WORDS[i + 1]} == = ]]; then a+=(\"$w=${COMP_WORDS[i + 2]}\")\n"
          "            else a+=(\"$w=${COMP_WORDS[i + 1]}\"); fi ;;\n"
          "        esac\n"
          "    done\n"
          "    kubectl \"${a[@]}\" \"$@\" 2>/dev/null\n"
          "}\n\n"
          "# _gpuop_values SPEC: completes the current word from SPEC\n"
          "_gpuop_values() {\n"
          "    case $1 in\n"
          "    " GPUOP_CLI_FILE ") COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
          "    " GPUOP_CLI_CONTEXT ") COMPREPLY=($(compgen -W \"$(_gpuop_kubectl config "
          "get-contexts -o name)\" -- \"$cur\")) ;;\n"
          "    " GPUOP_CLI_NAMESPACE ") COMPREPLY=($(compgen -W \"$(_gpuop_kubectl get namespaces "
          "-o 'jsonpath={.items[*].metadata.name}')\" -- \"$cur\")) ;;\n"
          "    *) COMPREPLY=($(compgen -W \"$1\" -- \"$cur\")) ;;\n"
          "    esac\n"
          "}\n\n"
          "_gpuop() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} eq=\n"
          "    COMPREPLY=()\n"
          "    # --flag=value: bash splits it into --flag, =, value\n"
          "    if [[ $cur == = ]]; then cur= eq==\n"
          "    elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then\n"
          "        prev=${COMP_WORDS[COMP_CWORD - 2]} eq==\n"
          "    fi\n"
          "    if ((COMP_CWORD == 1)); then\n"
          "        COMPREPLY=($(compgen -W \"",
          o);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%s", i ? " " : "", cmds[i].name);
    fputs(" help\" -- \"$cur\"))\n"
          "        return\n"
          "    fi\n"
          "    case ${COMP_WORDS[1]} in\n",
          o);
    for (size_t i = 0; i < n; i++) {
        const struct gpuop_cli_command *c = &cmds[i];
        fprintf(o, "    %s)\n        case $eq$prev in\n", c->name);
        for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++) {
            if (!fl->values)
                continue;
            if (fl->arg == optional_argument)
                fprintf(o, "        =--%s", fl->name);
            else if (fl->shrt)
                fprintf(o, "        --%s | =--%s | -%c", fl->name, fl->name, fl->shrt);
            else if (fl->arg == required_argument)
                fprintf(o, "        --%s | =--%s", fl->name, fl->name);
            else
                continue;
            fprintf(o, ") _gpuop_values \"%s\"; return ;;\n", fl->values);
        }
        /* a flag whose value is free text: nothing to offer */
        int free_text = 0;
        for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++)
            if (!fl->values && fl->arg == required_argument) {
                fprintf(o, "%s--%s | =--%s", free_text++ ? " | " : "        ", fl->name, fl->name);
                if (fl->shrt)
                    fprintf(o, " | -%c", fl->shrt);
            }
        if (free_text)
            fputs(") return ;;\n", o);
        fputs("        esac\n        COMPREPLY=($(compgen -W \"", o);
        if (c->args)
            fprintf(o, "%s ", c->args);
        bash_flag_words(o, c);
        fputs("\" -- \"$cur\"))\n", o);
        fputs("        ;;\n", o);
    }
    fputs("    esac\n"
          "}\n\n"
          "# -o nospace keeps \"--leader-elect=\" open; add the space back to whole words\n"
          "_gpuop_space() {\n"
          "    _gpuop\n"
          "    local i\n"
          "    for i in \"${!COMPREPLY[@]}\"; do\n"
          "        [[ ${COMPREPLY[i]} == *= || -d ${COMPREPLY[i]} ]] || COMPREPLY[i]+=' '\n"
          "    done\n"
          "}\n"
          "complete -o default -o nospace -F _gpuop_space gpuop kubectl-gpuop\n",
          o);
}

/* ---- zsh ---- */

/* Writes s with what would end a single-quoted _arguments spec escaped,
 * up to its first line break or parenthesis (the gist of a help line). */
static void zsh_text(FILE *o, const char *s)
{
    const char *end = s + strcspn(s, "\n");
    const char *paren = strstr(s, " (");
    if (paren && paren < end)
        end = paren;
    for (; s < end; s++) {
        if (*s == '\'')
            fputs("'\\''", o);
        else if (*s == '[' || *s == ']' || *s == ':' || *s == '\\')
            fprintf(o, "\\%c", *s);
        else
            fputc(*s, o);
    }
}

static void zsh_action(FILE *o, const struct gpuop_cli_flag *fl)
{
    if (!fl->values)
        fputs(" ", o);
    else if (!strcmp(fl->values, GPUOP_CLI_FILE))
        fputs("_files", o);
    else if (!strcmp(fl->values, GPUOP_CLI_CONTEXT))
        fputs("_gpuop_contexts", o);
    else if (!strcmp(fl->values, GPUOP_CLI_NAMESPACE))
        fputs("_gpuop_namespaces", o);
    else
        fprintf(o, "(%s)", fl->values);
}

static void zsh_script(FILE *o)
{
    size_t n;
    const struct gpuop_cli_command *cmds = gpuop_cli_commands(&n);
    fputs(
        "#compdef gpuop kubectl-gpuop\n"
        "# zsh completion for gpuop and kubectl-gpuop, written by `gpuop completion zsh`\n"
        "# from gpuop's command table. Use: gpuop completion zsh > \"${fpath[1]}/_gpuop\",\n"
        "# or source it after compinit.\n\n"
        "_gpuop_kubectl() {\n"
        "    local -a a\n"
        "    local i\n"
        "    for ((i = 1; i < $#words; i++)); do\n"
        "        case $words[i] in\n"
        "        --kubeconfig | --context) a+=(\"$words[i]=$words[i+1]\") ;;\n"
        "        --kubeconfig=* | --context=*) a+=(\"$words[i]\") ;;\n"
        "        esac\n"
        "    done\n"
        "    kubectl $a \"$@\" 2>/dev/null\n"
        "}\n"
        "_gpuop_contexts() {\n"
        "    local -a c\n"
        "    c=(${(f)\"$(_gpuop_kubectl config get-contexts -o name)\"})\n"
        "    _describe -t contexts 'kubeconfig context' c\n"
        "}\n"
        "_gpuop_namespaces() {\n"
        "    local -a c\n"
        "    c=(${=\"$(_gpuop_kubectl get namespaces -o 'jsonpath={.items[*].metadata.name}')\"})\n"
        "    _describe -t namespaces 'namespace' c\n"
        "}\n\n"
        "_gpuop() {\n"
        "    local -a commands\n"
        "    commands=(\n",
        o);
    for (size_t i = 0; i < n; i++) {
        fprintf(o, "        '%s:", cmds[i].name);
        zsh_text(o, cmds[i].summary);
        fputs("'\n", o);
    }
    fputs("    )\n"
          "    if ((CURRENT == 2)); then\n"
          "        _describe -t commands 'gpuop command' commands\n"
          "        return\n"
          "    fi\n"
          "    local cmd=$words[2]\n"
          "    shift words\n"
          "    ((CURRENT--))\n"
          "    case $cmd in\n",
          o);
    for (size_t i = 0; i < n; i++) {
        const struct gpuop_cli_command *c = &cmds[i];
        fprintf(o, "    %s)\n        _arguments -s", c->name);
        for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++) {
            const char *eq = fl->arg == required_argument   ? "="
                             : fl->arg == optional_argument ? "=-"
                                                            : "";
            fputs(" \\\n            ", o);
            if (fl->shrt)
                fprintf(o, "'(-%c --%s)'{-%c%s,--%s%s}'[", fl->shrt, fl->name, fl->shrt,
                        fl->arg == required_argument ? "+" : "", fl->name, eq);
            else
                fprintf(o, "'--%s%s[", fl->name, eq);
            zsh_text(o, fl->help);
            fputs("]", o);
            if (fl->arg != no_argument) {
                fputs(fl->arg == optional_argument ? "::" : ":", o);
                zsh_text(o, fl->meta ? fl->meta : "value");
                fputs(":", o);
                zsh_action(o, fl);
            }
            fputs("'", o);
        }
        if (c->args)
            fprintf(o, " \\\n            '1:%s:(%s)'", c->name, c->args);
        fputs("\n        ;;\n", o);
    }
    fputs("    esac\n"
          "}\n\n"
          "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
          "    _gpuop \"$@\"\n"
          "else\n"
          "    compdef _gpuop gpuop kubectl-gpuop\n"
          "fi\n",
          o);
}

/* ---- cobra's __complete protocol, for kubectl ---- */

/* cobra's ShellCompDirective values */
#define DIRECTIVE_DEFAULT  0 /* and files */
#define DIRECTIVE_NO_SPACE 2
#define DIRECTIVE_NO_FILES 4
#define KUBECTL_OUTPUT_MAX (64u << 10) /* contexts or namespaces read from kubectl */

/* Runs kubectl with the --kubeconfig/--context of words[0..n) and args;
 * prints each whitespace-separated word of its output that starts with
 * prefix, after pre (e.g. "--context="). */
static void kubectl_words(char **words, int n, const char *const *args, const char *pre,
                          const char *prefix)
{
    char *argv[16];
    int k = 0;
    argv[k++] = "kubectl";
    for (int i = 0; i < n && k < 6; i++)
        if ((!strcmp(words[i], "--kubeconfig") || !strcmp(words[i], "--context")) && i + 1 < n) {
            argv[k++] = words[i];
            argv[k++] = words[++i];
        } else if (!strncmp(words[i], "--kubeconfig=", 13) || !strncmp(words[i], "--context=", 10))
            argv[k++] = words[i];
    for (; *args && k < 15; args++)
        argv[k++] = (char *)*args;
    argv[k] = NULL;
    int fd[2];
    if (pipe(fd) < 0)
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        execvp("kubectl", argv);
        _exit(127);
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        return;
    }
    char *buf = malloc(KUBECTL_OUTPUT_MAX + 1);
    size_t len = 0;
    ssize_t r;
    while (buf && len < KUBECTL_OUTPUT_MAX &&
           (r = read(fd[0], buf + len, KUBECTL_OUTPUT_MAX - len)) > 0)
        len += (size_t)r;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    if (!buf)
        return;
    buf[len] = '\0';
    for (char *save = NULL, *w = strtok_r(buf, " \t\n", &save); w;
         w = strtok_r(NULL, " \t\n", &save))
        if (!strncmp(w, prefix, strlen(prefix)))
            printf("%s%s\n", pre, w);
    free(buf);
}

/* Prints the candidates of a value spec for flag fl that start with
 * prefix; returns the directive. */
static int complete_value(const struct gpuop_cli_flag *fl, char **words, int n, const char *pre,
                          const char *prefix)
{
    static const char *const contexts[] = {"config", "get-contexts", "-o", "name", NULL};
    static const char *const namespaces[] = {"get", "namespaces", "-o",
                                             "jsonpath={.items[*].metadata.name}", NULL};
    if (!fl->values)
        return DIRECTIVE_NO_FILES;
    if (!strcmp(fl->values, GPUOP_CLI_FILE))
        return DIRECTIVE_DEFAULT;
    if (!strcmp(fl->values, GPUOP_CLI_CONTEXT) || !strcmp(fl->values, GPUOP_CLI_NAMESPACE)) {
        kubectl_words(words, n, !strcmp(fl->values, GPUOP_CLI_CONTEXT) ? contexts : namespaces, pre,
                      prefix);
        return DIRECTIVE_NO_FILES;
    }
    const char *v = fl->values;
    while (*v) {
        size_t len = strcspn(v, " ");
        if (len >= strlen(prefix) && !strncmp(v, prefix, strlen(prefix)))
            printf("%s%.*s\n", pre, (int)len, v);
        v += len + (v[len] == ' ');
    }
    return DIRECTIVE_NO_FILES;
}

/* The flag of c that word names ("--output", "-o"), or NULL. */
static const struct gpuop_cli_flag *named(const struct gpuop_cli_command *c, const char *word,
                                          size_t len)
{
    for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++)
        if ((len == strlen(fl->name) + 2 && !strncmp(word, "--", 2) &&
             !strncmp(word + 2, fl->name, len - 2)) ||
            (fl->shrt && len == 2 && word[0] == '-' && word[1] == fl->shrt))
            return fl;
    return NULL;
}

int gpuop_cmd_complete(int argc, char **argv)
{
    /* argv[0] is "__complete"; the last word is the one being completed */
    char **words = argv + 1;
    int n = argc - 1;
    const char *cur = n > 0 ? words[n - 1] : "";
    int directive = DIRECTIVE_NO_FILES;
    if (n <= 1) {
        size_t nc;
        const struct gpuop_cli_command *cmds = gpuop_cli_commands(&nc);
        for (size_t i = 0; i < nc; i++)
            if (!strncmp(cmds[i].name, cur, strlen(cur)))
                printf("%s\t%s\n", cmds[i].name, cmds[i].summary);
        printf(":%d\n", directive);
        return 0;
    }
    const struct gpuop_cli_command *c = gpuop_cli_command(words[0]);
    const struct gpuop_cli_flag *prev =
        c && n >= 3 ? named(c, words[n - 2], strlen(words[n - 2])) : NULL;
    const char *eq = strchr(cur, '=');
    if (!c) {
        /* nothing to offer */
    } else if (prev && prev->arg == required_argument) {
        directive = complete_value(prev, words, n - 1, "", cur);
    } else if (!strncmp(cur, "--", 2) && eq) {
        const struct gpuop_cli_flag *fl = named(c, cur, (size_t)(eq - cur));
        char pre[96];
        snprintf(pre, sizeof(pre), "%.*s", (int)(eq - cur + 1), cur);
        if (fl && fl->arg != no_argument)
            directive = complete_value(fl, words, n - 1, pre, eq + 1);
    } else if (cur[0] == '-') {
        for (const struct gpuop_cli_flag *fl = c->flags; fl && fl->name; fl++) {
            char word[96];
            snprintf(word, sizeof(word), "--%s%s", fl->name,
                     fl->arg == optional_argument ? "=" : "");
            if (!strncmp(word, cur, strlen(cur)))
                printf("%s\t%.*s\n", word, (int)strcspn(fl->help, "\n"), fl->help);
        }
    } else if (c->args) {
        const struct gpuop_cli_flag pos = {"", 0, required_argument, NULL, c->args, ""};
        directive = complete_value(&pos, words, n - 1, "", cur);
    }
    printf(":%d\n", directive);
    return fflush(stdout) == 0 ? 0 : 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s completion bash|zsh\n\n"
            "Prints a shell completion script for gpuop and kubectl-gpuop.\n\n"
            "  bash:  source <(%s completion bash)\n"
            "         (or save it in /etc/bash_completion.d/gpuop)\n"
            "  zsh:   %s completion zsh > \"${fpath[1]}/_gpuop\"\n"
            "         (or source it after compinit)\n\n",
            gpuop_cli_program(), gpuop_cli_program(), gpuop_cli_program());
    gpuop_cli_flags_help(f, gpuop_cli_command("completion"));
}

int gpuop_cmd_completion(int argc, char **argv)
{
    const struct gpuop_cli_command *self = gpuop_cli_command("completion");
    struct option opts[8];
    char shortopts[16];
    if (gpuop_cli_getopt(self, opts, 8, shortopts, sizeof(shortopts)) < 0)
        return 2;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        const struct gpuop_cli_flag *fl = gpuop_cli_flag_of(self, c);
        if (fl && !strcmp(fl->name, "help")) {
            usage(stdout);
            return 0;
        }
        usage(stderr);
        return 2;
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    const char *shell = argv[optind];
    if (!strcmp(shell, "bash"))
        bash_script(stdout);
    else if (!strcmp(shell, "zsh"))
        zsh_script(stdout);
    else {
        fprintf(stderr, "%s completion: unknown shell '%s' (bash or zsh)\n", gpuop_cli_program(),
                shell);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
