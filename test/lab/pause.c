/*
 * pause.c — the pod sandbox ("infra") process of the real-node lab: the
 * first process of every pod, holding its namespaces. It does nothing but
 * wait for signals: SIGINT/SIGTERM end it with status 0, SIGCHLD reaps
 * every exited child (it is PID 1 of the pod when the pod shares its PID
 * namespace). Built statically and packaged FROM scratch by
 * test/lab/pause-image, since nothing can be pulled.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    sigset_t set;
    int sig;

    if (argc > 1 && argv[1][0] == '-' && argv[1][1] == 'v') {
        puts("gpuop-lab-pause 1");
        return 0;
    }
    if (getpid() != 1)
        fprintf(stderr, "pause: warning: not PID 1\n");
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        perror("pause: sigprocmask");
        return 1;
    }
    for (;;) {
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGCHLD) {
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
            continue;
        }
        return 0;
    }
}
