/*
 * standins.c — the real-node lab's stand-ins for NVIDIA's operand
 * programs (test/lab/standin-images packs them into images; docs/lab.md,
 * "Stand-in operand images", lists what each checks and the NVIDIA source
 * it mirrors). One static multi-call binary: what it does is chosen by the
 * name it is run as (nvidia-driver, nvidia-smi, nvidia-validator,
 * nvidia-ctk-installer / nvidia-toolkit, nvidia-device-plugin-gates (the
 * checks of the Go device plugin stand-in, test/lab/gomod-standins),
 * gpu-feature-discovery, config-manager, dcgm-exporter, driver-manager;
 * cos-gpu-installer, GKE's driver installer on Container-Optimized OS).
 *
 * Each stand-in keeps the files and gates of NVIDIA's program: it writes
 * and waits for the same files under /run/nvidia, and it checks what the
 * real image needs from its pod (a file present, an env var set, a path
 * that is a mount from the host, the service-account token) and exits
 * non-zero when the real one would fail. Every check is logged, one line
 * each, with the wall-clock time ("t=SECONDS.NANOS"), so a test can order
 * events from `kubectl logs`. Nothing here is a GPU: nvidia-smi is this
 * binary again, installed into the driver stand-in's root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#define VALIDATIONS     "/run/nvidia/validations"
#define SA_DIR          "/var/run/secrets/kubernetes.io/serviceaccount"
#define TOKEN_MAX       16384 /* bytes read of the service-account token */
#define FILE_MAX        4096  /* bytes read of any other file */
#define DEFAULT_SLEEP_S 5     /* nvidia-validator's default retry interval */
#define NVML            "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
#define API_BODY_MAX    (4 << 20) /* bytes of an API answer kept */
#define API_TIMEOUT_S   30        /* one API request */

static const char *me = "standin";

static void say(const char *fmt, ...)
{
    struct timespec ts;
    va_list ap;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("[%s t=%lld.%09ld] ", me, (long long)ts.tv_sec, ts.tv_nsec);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static int die(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    say("FAIL: %s", buf);
    return 1;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_exec(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (st.st_mode & 0111);
}

/* read_file: up to max-1 bytes, NUL-terminated; -1 on error. */
static ssize_t read_file(const char *p, char *buf, size_t max)
{
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n, got = 0;
    if (fd < 0)
        return -1;
    while ((size_t)got < max - 1 && (n = read(fd, buf + got, max - 1 - got)) > 0)
        got += n;
    close(fd);
    buf[got] = 0;
    return got;
}

static int write_atomic(const char *p, const char *content)
{
    char tmp[PATH_MAX];
    FILE *f;
    snprintf(tmp, sizeof tmp, "%s.standin-tmp", p);
    if (!(f = fopen(tmp, "w")))
        return -1;
    fputs(content, f);
    if (fclose(f) != 0 || rename(tmp, p) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* host_mount: the mount point (from /proc/self/mountinfo) that holds path,
 * written to out; returns 1 if it is a mount other than the container's
 * root, i.e. what is written there outlives the container. */
static int host_mount(const char *path, char *out, size_t outsz)
{
    char line[4096], best[PATH_MAX] = "/", mp[PATH_MAX];
    size_t bestlen = 1;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        /* id parent major:minor root mountpoint ... */
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
            continue;
        size_t l = strlen(mp);
        if (strcmp(mp, "/") == 0)
            continue;
        if (strncmp(path, mp, l) == 0 && (path[l] == 0 || path[l] == '/') && l >= bestlen) {
            snprintf(best, sizeof best, "%s", mp);
            bestlen = l;
        }
    }
    fclose(f);
    snprintf(out, outsz, "%s", best);
    return strcmp(best, "/") != 0;
}

static int need_host_path(const char *path, const char *why)
{
    char mp[PATH_MAX];
    if (!host_mount(path, mp, sizeof mp))
        return die("%s is not on a mount from the host (%s): what is written there dies with the "
                   "container",
                   path, why);
    say("check: %s is on the host mount %s (%s)", path, mp, why);
    return 0;
}

static int need_env(const char *name, const char *why)
{
    const char *v = env(name);
    if (!v)
        return die("env %s is not set (%s)", name, why);
    say("check: env %s=%s (%s)", name, v, why);
    return 0;
}

static int need_file(const char *path, const char *why)
{
    if (!is_file(path))
        return die("%s is absent (%s)", path, why);
    say("check: %s present (%s)", path, why);
    return 0;
}

/* wait_signal: blocks until SIGTERM/SIGINT/SIGHUP/SIGQUIT, reaping
 * children meanwhile; returns the signal. */
static int wait_signal(void)
{
    sigset_t set;
    int sig = 0;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (;;) {
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGCHLD) {
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
            continue;
        }
        say("caught signal %d", sig);
        return sig;
    }
}

/* The value of KEY in a KEY=VALUE file (driver-ready), into out. */
static int kv_get(const char *text, const char *key, char *out, size_t outsz)
{
    size_t kl = strlen(key);
    const char *p = text;
    while (p && *p) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *v = p + kl + 1, *e = strchr(v, '\n');
            size_t n = e ? (size_t)(e - v) : strlen(v);
            if (n >= outsz)
                n = outsz - 1;
            memcpy(out, v, n);
            out[n] = 0;
            return 0;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

/* find_in_root: ROOT/DIR/NAME for the first DIR that has it (internal/
 * driver/root.go of gpu-operator v26.7.0: "/" first, then the list). */
static int find_in_root(const char *root, const char *name, const char *const *dirs, char *out,
                        size_t outsz)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, name);
    if (access(p, F_OK) == 0) {
        snprintf(out, outsz, "%s", p);
        return 0;
    }
    for (; *dirs; dirs++) {
        snprintf(p, sizeof p, "%s%s/%s", root, *dirs, name);
        if (access(p, F_OK) == 0) {
            snprintf(out, outsz, "%s", p);
            return 0;
        }
    }
    return -1;
}

static const char *const LIB_DIRS[] = {
    "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/lib64",     "/lib/x86_64-linux-gnu",     "/lib/aarch64-linux-gnu",
    NULL};
static const char *const SMI_DIRS[] = {"/usr/bin", "/usr/sbin", "/bin", "/sbin", NULL};

/* ---- nvidia-smi ---------------------------------------------------------------- */

static int smi_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("GPU 0: gpuop lab stand-in (UUID: GPU-00000000-0000-0000-0000-000000000000)\n");
    return 0;
}

/* ---- nvidia-driver --------------------------------------------------------------- */

static int copy_self(const char *dst)
{
    char buf[65536];
    ssize_t n;
    int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
    if (in < 0)
        return -1;
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (out < 0) {
        close(in);
        return -1;
    }
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n)
            break;
    close(in);
    return close(out);
}

static int module_in_use(void);
#define LAB_MODULE "/run/nvidia/.gpuop-lab-module-loaded"
#define STATE_FILE "/run/nvidia/nvidia-driver.state"

static int driver_main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";
    char pid[32], mp[PATH_MAX];
    int fd;

    say("nvidia-driver %s (stand-in for gpu-driver-container's nvidia-driver)", cmd);
    if (strcmp(cmd, "probe_nvidia_peermem") == 0)
        return 0;
    if (strcmp(cmd, "reload_nvidia_peermem") == 0) {
        wait_signal();
        return 0;
    }
    if (strcmp(cmd, "init") != 0)
        return die("unknown command '%s' (the image's command is `nvidia-driver init`)", cmd);
    /* RUN_DIR=/run/nvidia, shared with the host and the other operands. */
    if (need_host_path("/run/nvidia/driver", "the driver root is exposed at /run/nvidia/driver"))
        return 1;
    host_mount("/run/nvidia", mp, sizeof mp);
    mkdir(VALIDATIONS, 0755);
    /* PID_FILE=RUN_DIR/nvidia-driver.pid, locked: one driver per node. */
    fd = open("/run/nvidia/nvidia-driver.pid", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
        return die("An instance of the NVIDIA driver is already running, aborting");
    if (ftruncate(fd, 0) != 0)
        return die("ftruncate pid file: %s", strerror(errno));
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (write(fd, pid, strlen(pid)) < 0)
        return die("write pid file: %s", strerror(errno));
    write_atomic(VALIDATIONS "/.driver-daemons-status", "NotReady\n");
    say("wrote /run/nvidia/nvidia-driver.pid and .driver-daemons-status=NotReady");

    if (env("STANDIN_DRIVER_NEVER_READY")) {
        say("STANDIN_DRIVER_NEVER_READY: the module never loads, no driver root (lab negative "
            "test); waiting for signal");
        wait_signal();
        unlink("/run/nvidia/nvidia-driver.pid");
        return 0;
    }

    /* _install_userspace_components: nvidia-smi and libnvidia-ml.so.1 in
     * the container's own root. */
    mkdir("/usr/lib", 0755);
    mkdir("/usr/lib/x86_64-linux-gnu", 0755);
    if (copy_self("/usr/bin/nvidia-smi") != 0)
        return die("install /usr/bin/nvidia-smi: %s", strerror(errno));
    if (write_atomic("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "gpuop lab stand-in\n") != 0)
        return die("install libnvidia-ml.so.1: %s", strerror(errno));
    say("installed /usr/bin/nvidia-smi and /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");

    /* _load_driver: the lab has no nvidia module; /sys/module/nvidia/refcnt
     * (what the startup probe and the validator look at) is made visible
     * in this container only, on a tmpfs over /sys/module. */
    if (!is_file("/sys/module/nvidia/refcnt")) {
        if (mount("standin-modules", "/sys/module", "tmpfs", 0, "mode=0755") == 0 &&
            mkdir("/sys/module/nvidia", 0755) == 0 &&
            write_atomic("/sys/module/nvidia/refcnt", "1\n") == 0)
            say("module 'loaded': /sys/module/nvidia/refcnt (tmpfs, this container only)");
        else
            say("warning: could not fake /sys/module/nvidia/refcnt: %s", strerror(errno));
    }

    /* _mount_rootfs: mount --make-runbindable /sys; mount --rbind /
     * /run/nvidia/driver (propagated to the host: Bidirectional). */
    if (mount(NULL, "/sys", NULL, MS_UNBINDABLE | MS_REC, NULL) != 0)
        say("warning: make-runbindable /sys: %s", strerror(errno));
    mkdir("/run/nvidia/driver", 0755);
    if (mount("/", "/run/nvidia/driver", NULL, MS_BIND | MS_REC, NULL) != 0)
        return die("mount --rbind / /run/nvidia/driver: %s", strerror(errno));
    say("mounted the driver root at /run/nvidia/driver (host mount %s)", mp);
    /* the module "loaded" for the driver manager (the lab has none: a host
       file), and the install configuration stored (DRIVER_CONFIG_STATE_FILE) */
    write_atomic(LAB_MODULE, "1\n");
    if (env("DRIVER_CONFIG_DIGEST")) {
        char st[64];
        snprintf(st, sizeof st, "%s\n", env("DRIVER_CONFIG_DIGEST"));
        write_atomic(STATE_FILE, st);
    }
    write_atomic(VALIDATIONS "/.driver-daemons-status", "Ready\n");
    say("Done, now waiting for signal");
    wait_signal();
    /* _shutdown: _unload_driver, refused while the module is in use (here:
       a GPU pod on the node), and then nothing else: the container runs on
       until it is killed; else _unmount_rootfs (umount -l -R), rm PID_FILE. */
    while (module_in_use()) {
        say("Could not unload NVIDIA driver kernel modules, driver is in use");
        wait_signal();
    }
    unlink(LAB_MODULE);
    if (umount2("/run/nvidia/driver", MNT_DETACH) != 0)
        say("warning: umount -l /run/nvidia/driver: %s", strerror(errno));
    else
        say("unmounted /run/nvidia/driver");
    unlink("/run/nvidia/nvidia-driver.pid");
    return 0;
}

/* ---- cos-gpu-installer (GKE on Container-Optimized OS) ------------------------------- */

/* GKE installs the driver itself, from its nvidia-driver-installer
 * DaemonSet (GoogleCloudPlatform/container-engine-accelerators,
 * nvidia-driver-installer/cos/daemonset-preloaded.yaml): the host's
 * /home/kubernetes/bin/nvidia (NVIDIA_INSTALL_DIR_HOST) mounted at
 * /usr/local/nvidia (NVIDIA_INSTALL_DIR_CONTAINER), with nvidia-smi in
 * bin/ and the libraries in lib64/ (its LD_LIBRARY_PATH). The stand-in lays
 * out that tree (nvidia-smi is this binary) and exits: a driver on the host
 * that no operand installed, which the validator finds under
 * DRIVER_INSTALL_DIR by internal/driver/root.go's lookup ("/bin",
 * "/lib64"). */
#define COS_INSTALL_DIR_CTR  "/usr/local/nvidia"
#define COS_INSTALL_DIR_HOST "/home/kubernetes/bin/nvidia"

static int cos_installer_main(int argc, char **argv)
{
    const char *dir = env("NVIDIA_INSTALL_DIR_CONTAINER") ? env("NVIDIA_INSTALL_DIR_CONTAINER")
                                                          : COS_INSTALL_DIR_CTR;
    const char *host =
        env("NVIDIA_INSTALL_DIR_HOST") ? env("NVIDIA_INSTALL_DIR_HOST") : COS_INSTALL_DIR_HOST;
    char p[PATH_MAX];
    (void)argc;
    (void)argv;
    say("cos-gpu-installer (stand-in for GKE's cos_gpu_installer) into %s (host %s)", dir, host);
    if (need_host_path(dir, "the driver is installed on the node, for every pod"))
        return 1;
    snprintf(p, sizeof p, "%s/bin", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/lib64", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/bin/nvidia-smi", dir);
    if (copy_self(p) != 0)
        return die("install %s: %s", p, strerror(errno));
    snprintf(p, sizeof p, "%s/lib64/libnvidia-ml.so.1", dir);
    if (write_atomic(p, "gpuop lab stand-in\n") != 0)
        return die("install %s: %s", p, strerror(errno));
    say("installed %s/bin/nvidia-smi and %s/lib64/libnvidia-ml.so.1", host, host);
    return 0;
}

/* ---- nvidia-validator ---------------------------------------------------------------- */

static int sleep_s(void)
{
    const char *v = env("SLEEP_INTERVAL_SECONDS");
    int s = v ? atoi(v) : DEFAULT_SLEEP_S;
    return s > 0 ? s : DEFAULT_SLEEP_S;
}

static int with_wait(void)
{
    const char *v = env("WITH_WAIT");
    return v && strcmp(v, "true") == 0;
}

static const char *out_dir(void)
{
    return env("OUTPUT_DIR") ? env("OUTPUT_DIR") : VALIDATIONS;
}

static void status_path(char *p, size_t n, const char *name)
{
    snprintf(p, n, "%s/%s", out_dir(), name);
}

static int create_status(const char *name, const char *content)
{
    char p[PATH_MAX];
    status_path(p, sizeof p, name);
    if (write_atomic(p, content) != 0)
        return die("write %s: %s", p, strerror(errno));
    say("wrote %s", p);
    return 0;
}

static void delete_status(const char *name)
{
    char p[PATH_MAX];
    status_path(p, sizeof p, name);
    unlink(p);
}

/* rest.InClusterConfig(): the service host and port from the environment
 * and the token file (client-go rest/config.go). Logs the token's
 * subject and pod (decoded JWT claims) so a test sees which token it was. */
static char tok[TOKEN_MAX]; /* the token in_cluster_config read */

static int in_cluster_config(void)
{
    char payload[TOKEN_MAX], claims[TOKEN_MAX], *dot1, *dot2;
    const char *h = env("KUBERNETES_SERVICE_HOST"), *port = env("KUBERNETES_SERVICE_PORT");
    ssize_t n;
    if (!h || !port)
        return die("error getting cluster config: unable to load in-cluster configuration, "
                   "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined");
    n = read_file(SA_DIR "/token", tok, sizeof tok);
    if (n <= 0)
        return die("error getting cluster config: open %s/token: %s (no service-account token: "
                   "automountServiceAccountToken false?)",
                   SA_DIR, n < 0 ? strerror(errno) : "empty");
    while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == ' '))
        tok[--n] = 0;
    if (!is_file(SA_DIR "/ca.crt"))
        say("warning: %s/ca.crt absent (client-go logs this and goes on)", SA_DIR);
    /* base64url-decode the payload (second part) of the JWT. */
    dot1 = strchr(tok, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    claims[0] = 0;
    if (dot1 && dot2 && (size_t)(dot2 - dot1 - 1) < sizeof payload) {
        static const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        size_t len = dot2 - dot1 - 1, i, o = 0;
        unsigned acc = 0;
        int bits = 0;
        memcpy(payload, dot1 + 1, len);
        payload[len] = 0;
        for (i = 0; i < len && o < sizeof claims - 1; i++) {
            const char *c = strchr(al, payload[i]);
            if (!c || !*c)
                break;
            acc = (acc << 6) | (unsigned)(c - al);
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                claims[o++] = (char)((acc >> bits) & 0xff);
            }
        }
        claims[o] = 0;
    }
    {
        char sub[256] = "?";
        const char *s = strstr(claims, "\"sub\":\"");
        if (s) {
            const char *e = strchr(s + 7, '"');
            size_t l = e ? (size_t)(e - s - 7) : 0;
            if (l < sizeof sub) {
                memcpy(sub, s + 7, l);
                sub[l] = 0;
            }
        }
        say("check: in-cluster config: https://%s:%s, token %s/token read (%zd bytes, sub=%s)", h,
            port, SA_DIR, n, sub);
    }
    return 0;
}

/* ---- the API, as the validator's client-go does it ---------------------------------- */

struct body {
    char *p;
    size_t n;
};

static size_t on_body(char *d, size_t sz, size_t nm, void *u)
{
    struct body *b = u;
    size_t len = sz * nm;
    char *q;
    if (b->n + len > API_BODY_MAX)
        return 0;
    q = realloc(b->p, b->n + len + 1);
    if (!q)
        return 0;
    memcpy(q + b->n, d, len);
    b->p = q;
    b->n += len;
    b->p[b->n] = 0;
    return len;
}

/* api_req_ct METHOD PATH [BODY] CTYPE: a request with the service-account
 * token, verifying the cluster CA, BODY (may be NULL) sent as CTYPE (api_req:
 * a JSON merge patch); the HTTP code (0: no answer), the body into *out
 * (new, free it). */
static long api_req_ct(const char *method, const char *path, const char *send, const char *ctype,
                       char **out)
{
    const char *h = env("KUBERNETES_SERVICE_HOST"), *port = env("KUBERNETES_SERVICE_PORT");
    char url[2048], auth[TOKEN_MAX + 32];
    struct body b = {NULL, 0};
    struct curl_slist *hd = NULL;
    long code = 0;
    CURL *c = curl_easy_init();
    if (!c)
        return 0;
    snprintf(url, sizeof url, strchr(h, ':') ? "https://[%s]:%s%s" : "https://%s:%s%s", h, port,
             path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
    hd = curl_slist_append(hd, auth);
    hd = curl_slist_append(hd, "Accept: application/json");
    if (send) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        hd = curl_slist_append(hd, ct);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, send);
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(c, CURLOPT_CAINFO, SA_DIR "/ca.crt");
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)API_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    else
        say("%s %s: no answer", method, url);
    curl_slist_free_all(hd);
    curl_easy_cleanup(c);
    *out = b.p ? b.p : strdup("");
    return code;
}

static long api_req(const char *method, const char *path, const char *send, char **out)
{
    return api_req_ct(method, path, send, "application/merge-patch+json", out);
}

static long api_get(const char *path, char **out)
{
    return api_req("GET", path, NULL, out);
}

/* isDriverManagedByOperator (main.go): lists the DaemonSets labelled
 * app.kubernetes.io/component=nvidia-driver in OPERATOR_NAMESPACE (all
 * namespaces when empty); one whose controller is a nvidia.com/
 * ClusterPolicy or NVIDIADriver means yes. A refused list is an error.
 * The stand-in looks for that owner in the JSON text. */
static int driver_managed_by_operator(int *managed)
{
    const char *ns = env("OPERATOR_NAMESPACE");
    char path[512], *body = NULL;
    long code;
    if (ns)
        snprintf(path, sizeof path,
                 "/apis/apps/v1/namespaces/%s/daemonsets?labelSelector=app.kubernetes.io%%2F"
                 "component%%3Dnvidia-driver",
                 ns);
    else
        snprintf(path, sizeof path,
                 "/apis/apps/v1/daemonsets?labelSelector=app.kubernetes.io%%2Fcomponent%%3D"
                 "nvidia-driver");
    code = api_get(path, &body);
    if (code != 200) {
        die("error checking if driver is managed by GPU Operator: error listing daemonsets: HTTP "
            "%ld %.200s",
            code, body);
        free(body);
        return 1;
    }
    *managed =
        strstr(body, "\"apiVersion\":\"nvidia.com/") &&
        (strstr(body, "\"kind\":\"ClusterPolicy\"") || strstr(body, "\"kind\":\"NVIDIADriver\""));
    say("check: listed the driver DaemonSets (HTTP 200, the token accepted): managed by the GPU "
        "Operator: %s",
        *managed ? "yes" : "no");
    free(body);
    return 0;
}

static int run_quiet(const char *path)
{
    pid_t p = fork();
    int st;
    if (p == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 1);
        execl(path, "nvidia-smi", (char *)NULL);
        _exit(127);
    }
    if (p < 0 || waitpid(p, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Driver.validate() of cmd/nvidia-validator/main.go: a host driver
 * (nvidia-smi under /host) or the driver container's root. */
static int validate_driver(void)
{
    static const char *const host_smi[] = {"/usr/bin/nvidia-smi",
                                           "/usr/sbin/nvidia-smi",
                                           "/bin/nvidia-smi",
                                           "/sbin/nvidia-smi",
                                           "/usr/lib/wsl/lib/nvidia-smi",
                                           "/opt/bin/nvidia-smi",
                                           NULL};
    const char *root = env("DRIVER_INSTALL_DIR_CTR_PATH") ? env("DRIVER_INSTALL_DIR_CTR_PATH")
                                                          : "/run/nvidia/driver";
    const char *host_dir =
        env("DRIVER_INSTALL_DIR") ? env("DRIVER_INSTALL_DIR") : "/run/nvidia/driver";
    char p[PATH_MAX], lib[PATH_MAX], smi[PATH_MAX], content[2048], dev[PATH_MAX];
    const char *const *h;
    const char *dev_root, *dev_ctr;
    int managed = 0;

    delete_status("driver-ready");
    for (h = host_smi; *h; h++) {
        snprintf(p, sizeof p, "/host%s", *h);
        if (is_exec(p)) {
            say("check: pre-installed driver on the host: %s", p);
            if (run_quiet(p) != 0)
                return die("%s failed", p);
            return create_status("driver-ready", "IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\n"
                                                 "DRIVER_ROOT_CTR_PATH=/host\nNVIDIA_DEV_ROOT=/\n"
                                                 "DEV_ROOT_CTR_PATH=/host\n");
        }
    }
    say("check: no pre-installed driver on the host (no nvidia-smi under /host)");
    /* isDriverManagedByOperator needs the in-cluster config first. */
    if (in_cluster_config())
        return 1;
    if (driver_managed_by_operator(&managed))
        return 1;
    /* assertDriverContainerReady: stat .driver-ctr-ready (the driver's
     * startup probe writes it), retried with WITH_WAIT. */
    while (managed && !is_file(VALIDATIONS "/.driver-ctr-ready")) {
        if (!with_wait())
            return die("error checking driver container status: no %s/.driver-ctr-ready",
                       VALIDATIONS);
        say("command failed (no %s/.driver-ctr-ready), retrying after %d seconds", VALIDATIONS,
            sleep_s());
        sleep(sleep_s());
    }
    for (;;) {
        if (find_in_root(root, "libnvidia-ml.so.1", LIB_DIRS, lib, sizeof lib) == 0 &&
            find_in_root(root, "nvidia-smi", SMI_DIRS, smi, sizeof smi) == 0 &&
            run_quiet(smi) == 0) {
            say("check: driver container root %s: %s and %s, nvidia-smi ran", root, lib, smi);
            break;
        }
        if (!with_wait())
            return die("error validating driver: no libnvidia-ml.so.1/nvidia-smi under %s", root);
        say("failed to validate the driver (no libnvidia-ml.so.1/nvidia-smi under %s), retrying "
            "after %d seconds",
            root, sleep_s());
        sleep(sleep_s());
    }
    /* createDevCharSymlinks: needs /host-dev-char unless disabled. */
    if (!(env("DISABLE_DEV_CHAR_SYMLINK_CREATION") &&
          strcmp(env("DISABLE_DEV_CHAR_SYMLINK_CREATION"), "true") == 0)) {
        if (!is_dir("/host-dev-char"))
            return die("/host-dev-char is not mounted (creating the /dev/char symlinks)");
        say("check: /host-dev-char mounted (dev char symlinks not created in the lab)");
    }
    snprintf(dev, sizeof dev, "%s/dev", root);
    dev_root = is_dir(dev) ? host_dir : "/";
    dev_ctr = is_dir(dev) ? "/driver-root" : "/host";
    snprintf(content, sizeof content,
             "IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=%s\nDRIVER_ROOT_CTR_PATH=/driver-root\n"
             "NVIDIA_DEV_ROOT=%s\nDEV_ROOT_CTR_PATH=%s\n",
             host_dir, dev_root, dev_ctr);
    return create_status("driver-ready", content);
}

/* path_find NAME: the first executable NAME in PATH, into out. */
static int path_find(const char *name, char *out, size_t outsz)
{
    char path[4096], *dir, *save = NULL;
    snprintf(path, sizeof path, "%s", env("PATH") ? env("PATH") : "/usr/bin:/bin");
    for (dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        snprintf(out, outsz, "%s/%s", dir, name);
        if (is_exec(out))
            return 0;
    }
    return -1;
}

/* Toolkit.validate(): nvidia-smi runs in this container: the NVIDIA
 * runtime the toolkit set up injected it (the lab's `nvidia` runtime,
 * test/lab/real-node.sh, does so once the toolkit stand-in is installed,
 * for a container whose NVIDIA_VISIBLE_DEVICES asks for GPUs). */
static int validate_toolkit(void)
{
    char smi[PATH_MAX];
    delete_status("toolkit-ready");
    for (;;) {
        if (path_find("nvidia-smi", smi, sizeof smi) == 0 && run_quiet(smi) == 0) {
            say("check: %s ran (injected by the NVIDIA runtime; NVIDIA_VISIBLE_DEVICES=%s)", smi,
                env("NVIDIA_VISIBLE_DEVICES") ? env("NVIDIA_VISIBLE_DEVICES") : "");
            break;
        }
        if (!with_wait()) {
            say("toolkit is not ready");
            return die("nvidia-smi: not found in PATH (not injected: toolkit not set up, or "
                       "NVIDIA_VISIBLE_DEVICES=%s, or not the nvidia RuntimeClass)",
                       env("NVIDIA_VISIBLE_DEVICES") ? env("NVIDIA_VISIBLE_DEVICES") : "");
        }
        say("command failed (no nvidia-smi in PATH), retrying after %d seconds", sleep_s());
        sleep(sleep_s());
    }
    return create_status("toolkit-ready", "");
}

/* CUDA.validate() / Plugin.validate(): both talk to the API (a workload
 * pod; the node's nvidia.com/gpu). The stand-in checks what they need
 * before any call: the in-cluster config with its token, NODE_NAME and
 * OPERATOR_NAMESPACE (validateFlags), and the toolkit being ready. */
static int validate_api_component(const char *status)
{
    char p[PATH_MAX];
    delete_status(status);
    if (need_env("NODE_NAME", "validateFlags") || need_env("OPERATOR_NAMESPACE", "validateFlags"))
        return 1;
    if (in_cluster_config())
        return 1;
    status_path(p, sizeof p, "toolkit-ready");
    if (need_file(p, "a GPU workload runs only with the toolkit set up"))
        return 1;
    if (strcmp(status, "plugin-ready") == 0) {
        char path[512], *body = NULL;
        long code;
        snprintf(path, sizeof path, "/api/v1/nodes/%s", env("NODE_NAME"));
        code = api_get(path, &body);
        free(body);
        if (code != 200)
            return die("Error getting node %s: HTTP %ld", env("NODE_NAME"), code);
        say("check: GET node %s (HTTP 200); its nvidia.com/gpu is not checked (no GPU in the lab)",
            env("NODE_NAME"));
    } else {
        say("note: no CUDA workload pod in the lab");
    }
    return create_status(status, "");
}

static int validator_main(int argc, char **argv)
{
    const char *c = env("COMPONENT");
    (void)argc;
    (void)argv;
    say("nvidia-validator COMPONENT=%s WITH_WAIT=%s (stand-in for gpu-operator "
        "cmd/nvidia-validator)",
        c ? c : "", env("WITH_WAIT") ? env("WITH_WAIT") : "");
    if (!c)
        return die("invalid -c <component-name> flag: must not be empty string");
    if (need_host_path(out_dir(), "the validation files are read by the other operands"))
        return 1;
    if (mkdir(out_dir(), 0755) != 0 && errno != EEXIST)
        return die("mkdir %s: %s", out_dir(), strerror(errno));
    if (strcmp(c, "driver") == 0)
        return validate_driver();
    if (strcmp(c, "toolkit") == 0)
        return validate_toolkit();
    if (strcmp(c, "cuda") == 0)
        return validate_api_component("cuda-ready");
    if (strcmp(c, "plugin") == 0)
        return validate_api_component("plugin-ready");
    return die("component %s is not emulated by the lab stand-in", c);
}

/* ---- nvidia-ctk-installer (nvidia-toolkit) ---------------------------------------------- */

/* ---- k8s-driver-manager ----------------------------------------------------------------- */

/* k8s-driver-manager v0.12.0 (cmd/driver-manager/main.go), the driver
 * pod's init container: `driver-manager uninstall_driver`. It needs
 * NODE_NAME, the service-account token and the rights to read and patch
 * its node (it exits non-zero, and the driver never starts, without
 * them), the host root read-only at /host and /run/nvidia from the host.
 * It reads its node's deploy labels and the gpu-driver-upgrade-enabled
 * annotation (fetchCurrentLabels, fetchAutoUpgradeAnnotation), then:
 *   no module loaded: no eviction; the old driver root unmounted, its PID
 *     file removed, every paused deploy label set back;
 *   a module loaded: the operands paused through their deploy labels and
 *     their pods waited for; with the stored digest equal to
 *     DRIVER_CONFIG_DIGEST the module is kept; otherwise, unless the
 *     annotation says an upgrade controller owns the node, the node is
 *     cordoned and its GPU pods evicted (Eviction API) and waited for, the
 *     module unloaded (refused while GPU pods remain: exit 1, the labels
 *     set back), the node uncordoned; then the labels set back.
 * The lab has no nvidia module: "loaded" is LAB_MODULE, which the driver
 * stand-in writes when it loads and removes when it unloads, and "in use"
 * is a pod requesting nvidia.com/gpu on the node (gpu_pods). */
#define PAUSED_STR  "paused-for-driver-upgrade"
#define DM_WAIT_S   300 /* the longest wait for pods to go (NVIDIA: none for 0s) */
#define DM_POLL_S   2
#define DEPLOY_PFX  "nvidia.com/gpu.deploy."
#define UPGRADE_ANN "nvidia.com/gpu-driver-upgrade-enabled"
static const char *const DM_LABELS[] = {"operator-validator", "container-toolkit",
                                        "device-plugin",      "gpu-feature-discovery",
                                        "dcgm-exporter",      "dcgm",
                                        "mig-manager",        NULL};
/* waitForPodsToTerminate's app labels (main.go) */
static const char *const DM_APPS =
    "nvidia-operator-validator,nvidia-container-toolkit-daemonset,nvidia-device-plugin-daemonset,"
    "gpu-feature-discovery,nvidia-dcgm-exporter,nvidia-dcgm";

static int module_loaded(void)
{
    return is_file("/sys/module/nvidia/refcnt") || is_file(LAB_MODULE);
}

/* GET path as JSON (new), or NULL with the failure said. */
static json_t *api_json(const char *path)
{
    char *body = NULL;
    long code = api_get(path, &body);
    json_t *j = code == 200 ? json_loads(body, 0, NULL) : NULL;
    if (!j)
        say("GET %s: HTTP %ld %.200s", path, code, body);
    free(body);
    return j;
}

/* The node's deploy label value of l (borrowed from node), or NULL. */
static const char *deploy_of(json_t *node, const char *l)
{
    char key[128];
    snprintf(key, sizeof key, DEPLOY_PFX "%s", l);
    return json_string_value(
        json_object_get(json_object_get(json_object_get(node, "metadata"), "labels"), key));
}

/* maybeSetPaused / maybeSetTrue (main.go) of v into out. */
static void paused_of(const char *v, char *out, size_t n)
{
    if (!strcmp(v, "true"))
        snprintf(out, n, PAUSED_STR);
    else if (!strcmp(v, "false") || strstr(v, PAUSED_STR))
        snprintf(out, n, "%s", v);
    else
        snprintf(out, n, "%s_" PAUSED_STR, v);
}

static void unpaused_of(const char *v, char *out, size_t n)
{
    const char *p = strstr(v, PAUSED_STR);
    if (!strcmp(v, PAUSED_STR))
        snprintf(out, n, "true");
    else if (!p)
        snprintf(out, n, "%s", v);
    else
        snprintf(out, n, "%.*s%s", (int)(p > v && p[-1] == '_' ? p - v - 1 : p - v), v,
                 p + strlen(PAUSED_STR));
}

/* PATCHes node (path) with the deploy labels of node (borrowed) mapped by
 * f; only the ones that change. 0 or 1 (said). */
static int relabel(const char *path, json_t *node, void (*f)(const char *, char *, size_t),
                   const char *what)
{
    json_t *labels = json_object();
    char key[128], val[256], *body = NULL, *out = NULL;
    for (const char *const *l = DM_LABELS; *l; l++) {
        const char *v = deploy_of(node, *l);
        if (!v)
            continue;
        f(v, val, sizeof val);
        snprintf(key, sizeof key, DEPLOY_PFX "%s", *l);
        if (strcmp(v, val))
            json_object_set_new(labels, key, json_string(val));
    }
    int rc = 0;
    if (json_object_size(labels)) {
        json_t *p = json_pack("{s:{s:O}}", "metadata", "labels", labels);
        body = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(p);
        long code = api_req("PATCH", path, body, &out);
        if (code != 200)
            rc = die("failed to %s: HTTP %ld %.200s", what, code, out);
        else
            say("%s: %s", what, body);
    }
    free(body);
    free(out);
    json_decref(labels);
    return rc;
}

static int set_unschedulable(const char *path, int on)
{
    char *out = NULL;
    long code = api_req(
        "PATCH", path,
        on ? "{\"spec\":{\"unschedulable\":true}}" : "{\"spec\":{\"unschedulable\":null}}", &out);
    free(out);
    if (code != 200)
        return die("failed to %s the node: HTTP %ld", on ? "cordon" : "uncordon", code);
    say("%s the node", on ? "cordoned" : "uncordoned");
    return 0;
}

/* Whether pod p (borrowed) requests nvidia.com/gpu in any container. */
static int wants_gpu(json_t *p)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(p, "spec"), "containers"), i, c)
    {
        json_t *r = json_object_get(c, "resources");
        if (json_object_get(json_object_get(r, "limits"), "nvidia.com/gpu") ||
            json_object_get(json_object_get(r, "requests"), "nvidia.com/gpu"))
            return 1;
    }
    return 0;
}

/* The pods on the node (new list), with query q appended ("" or
 * "&labelSelector=..."), or NULL. */
static json_t *node_pods(const char *node, const char *ns, const char *q)
{
    char path[1024];
    if (ns)
        snprintf(path, sizeof path,
                 "/api/v1/namespaces/%s/pods?fieldSelector=spec.nodeName%%3D%s%s", ns, node, q);
    else
        snprintf(path, sizeof path, "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s%s", node, q);
    json_t *l = api_json(path);
    json_t *items = json_incref(json_object_get(l, "items"));
    json_decref(l);
    return items;
}

/* The GPU pods on the node not yet finished (new list of "ns/name"). */
static json_t *gpu_pods(const char *node)
{
    json_t *all = node_pods(node, NULL, ""), *out = json_array(), *p;
    size_t i;
    json_array_foreach(all, i, p)
    {
        const char *phase =
            json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        json_t *md = json_object_get(p, "metadata");
        if (!wants_gpu(p) || (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
            continue;
        json_array_append_new(
            out, json_pack("{s:s, s:s}", "ns", json_string_value(json_object_get(md, "namespace")),
                           "name", json_string_value(json_object_get(md, "name"))));
    }
    json_decref(all);
    return out;
}

/* Waits until the operand pods (NVIDIA's app labels) left the node. */
static int wait_operands(const char *node, const char *ns)
{
    char q[512];
    snprintf(q, sizeof q, "&labelSelector=app%%20in%%20(%s)", DM_APPS);
    for (int t = 0; t < DM_WAIT_S; t += DM_POLL_S) {
        json_t *l = node_pods(node, ns, q);
        size_t n = json_array_size(l);
        json_decref(l);
        if (l && !n) {
            say("the GPU operator components left the node");
            return 0;
        }
        sleep(DM_POLL_S);
    }
    return die("timed out waiting for the GPU operator components to leave the node");
}

/* nvDrainNode: evicts the node's GPU pods and waits until they are gone. */
static int evict_gpu_pods(const char *node)
{
    for (int t = 0; t < DM_WAIT_S; t += DM_POLL_S) {
        json_t *l = gpu_pods(node), *p;
        size_t i;
        if (!json_array_size(l)) {
            json_decref(l);
            say("no GPU pod left on the node");
            return 0;
        }
        json_array_foreach(l, i, p)
        {
            const char *ns = json_string_value(json_object_get(p, "ns"));
            const char *nm = json_string_value(json_object_get(p, "name"));
            char path[512], body[512], *out = NULL;
            snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/eviction", ns, nm);
            snprintf(body, sizeof body,
                     "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":"
                     "{\"name\":\"%s\",\"namespace\":\"%s\"}}",
                     nm, ns);
            long code = api_req_ct("POST", path, body, "application/json", &out);
            say("evicting GPU pod %s/%s: HTTP %ld", ns, nm, code);
            free(out);
        }
        json_decref(l);
        sleep(DM_POLL_S);
    }
    return die("cannot proceed until all GPU pods are drained from the node");
}

static void unmount_and_clean(void)
{
    if (umount2("/run/nvidia/driver", MNT_DETACH) == 0)
        say("unmounted the stale driver root /run/nvidia/driver");
    if (unlink("/run/nvidia/nvidia-driver.pid") == 0)
        say("removed the stale /run/nvidia/nvidia-driver.pid");
}

/* The loaded path of uninstallDriver, after the node was read: 0 or 1. */
static int uninstall_loaded(const char *path, json_t *node, const char *digest, int upgrade_owned)
{
    const char *nm = env("NODE_NAME"), *ns = env("OPERATOR_NAMESPACE");
    char stored[128] = "";
    if (relabel(path, node, paused_of, "shut down the GPU operator components") ||
        wait_operands(nm, ns))
        return 1;
    if (digest && read_file(STATE_FILE, stored, sizeof stored) > 0 &&
        !strncmp(stored, digest, strlen(digest)) &&
        (stored[strlen(digest)] == 0 || stored[strlen(digest)] == '\n')) {
        say("The NVIDIA driver is already loaded with the desired version and configuration, "
            "skipping the uninstallation of the driver");
        unmount_and_clean();
        return 0;
    }
    const char *ev = env("ENABLE_GPU_POD_EVICTION");
    int evict = ev && !strcmp(ev, "true") && !upgrade_owned;
    if (upgrade_owned)
        say("GPU pod eviction is superseded by the upgrade policy: the upgrade controller owns it");
    if (evict && set_unschedulable(path, 1))
        return 1;
    if (evict && evict_gpu_pods(nm)) {
        set_unschedulable(path, 0); /* cleanupOnFailure */
        return 1;
    }
    json_t *users = gpu_pods(nm);
    size_t n = json_array_size(users);
    json_decref(users);
    if (n) {
        if (evict)
            set_unschedulable(path, 0);
        return die("Could not unload NVIDIA driver kernel modules, driver is in use (%zu GPU "
                   "pod%s on the node)",
                   n, n == 1 ? "" : "s");
    }
    unlink(LAB_MODULE);
    say("unloaded the NVIDIA driver kernel modules");
    unmount_and_clean();
    if (evict && set_unschedulable(path, 0))
        return 1;
    return 0;
}

/* The driver stand-in's _unload_driver: refused while a GPU pod is on the
 * node (NODE_NAME), read with the pod's token; without one, not in use. */
static int module_in_use(void)
{
    const char *node = env("NODE_NAME");
    if (!node || !env("KUBERNETES_SERVICE_HOST") || !is_file(SA_DIR "/token") ||
        in_cluster_config())
        return 0;
    json_t *l = gpu_pods(node);
    size_t n = json_array_size(l);
    json_decref(l);
    return n > 0;
}

static int driver_manager_main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "", *node = env("NODE_NAME");
    const char *digest = env("DRIVER_CONFIG_DIGEST");
    char path[512], stored[128] = "";

    say("driver-manager %s (stand-in for k8s-driver-manager)", cmd);
    if (strcmp(cmd, "uninstall_driver") != 0)
        return die("unknown command '%s' (the driver pod runs `driver-manager uninstall_driver`)",
                   cmd);
    if (need_env("NODE_NAME", "the node whose labels it pauses") ||
        need_host_path("/run/nvidia", "the driver root and PID file it cleans up"))
        return 1;
    if (!is_dir("/host/etc") || access("/host/etc", W_OK) == 0)
        return die("/host is not the host root mounted read-only (isHostDriver runs chroot /host "
                   "nvidia-smi)");
    say("check: the host root is at /host, read-only");
    if (in_cluster_config())
        return 1;
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    json_t *n = api_json(path);
    if (!n)
        return die("failed to fetch current labels: getting node %s", node);
    const char *ann = json_string_value(json_object_get(
        json_object_get(json_object_get(n, "metadata"), "annotations"), UPGRADE_ANN));
    say("check: read node %s (HTTP 200, the token accepted): " UPGRADE_ANN "=%s", node,
        ann ? ann : "(none)");
    if (digest && read_file(STATE_FILE, stored, sizeof stored) > 0)
        say("DRIVER_CONFIG_DIGEST=%s, stored %.*s", digest, (int)strcspn(stored, "\n"), stored);
    else
        say("DRIVER_CONFIG_DIGEST=%s, none stored", digest ? digest : "(unset)");
    int rc = 0;
    if (!module_loaded()) {
        say("No NVIDIA driver loaded, skipping eviction of GPU clients and workloads");
        unmount_and_clean();
    } else {
        rc = uninstall_loaded(path, n, digest, ann && !strcmp(ann, "true"));
        json_decref(n);
        n = api_json(path); /* the labels as they are now */
    }
    /* rescheduleGPUOperatorComponents (also cleanupOnFailure's) */
    if (!n || relabel(path, n, unpaused_of, "rescheduled the GPU operator components"))
        rc = 1;
    json_decref(n);
    if (!rc)
        say("Driver uninstallation completed successfully");
    return rc;
}

/* The name the toolkit registers the NVIDIA runtime under in containerd:
 * --runtime-name from NVIDIA_RUNTIME_NAME, CONTAINERD_RUNTIME_CLASS or
 * DOCKER_RUNTIME_NAME, default "nvidia" (nvidia-container-toolkit v1.20.0,
 * cmd/nvidia-ctk-installer/container/runtime/runtime.go). */
static const char *toolkit_runtime_name(void)
{
    static const char *const vars[] = {"NVIDIA_RUNTIME_NAME", "CONTAINERD_RUNTIME_CLASS",
                                       "DOCKER_RUNTIME_NAME", NULL};
    const char *const *v;
    for (v = vars; *v; v++)
        if (env(*v))
            return env(*v);
    return "nvidia";
}

/* toolkit_register: what the real installer writes into containerd's
 * config (a runtime NAME whose binary is ROOT/toolkit/nvidia-container-
 * runtime), for the lab's runtime wrapper (test/lab/real-node.sh) to read:
 * RUN_DIR/.gpuop-lab-runtime names the runtime and the install folder. A
 * container created under another handler gets nothing injected. */
#define RUNTIME_REGISTRATION ".gpuop-lab-runtime"

static int toolkit_register(const char *pidf, const char *root, const char *name)
{
    char p[PATH_MAX], content[PATH_MAX + 256];
    snprintf(p, sizeof p, "%s", pidf);
    snprintf(strrchr(p, '/') + 1, sizeof p - (size_t)(strrchr(p, '/') + 1 - p), "%s",
             RUNTIME_REGISTRATION);
    snprintf(content, sizeof content, "runtime=%s\ninstall_dir=%s\n", name, root);
    if (write_atomic(p, content) != 0)
        return die("write %s: %s", p, strerror(errno));
    say("registered the runtime '%s' (binary under %s/toolkit) in %s", name, root, p);
    return 0;
}

static void toolkit_unregister(const char *pidf)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", pidf);
    snprintf(strrchr(p, '/') + 1, sizeof p - (size_t)(strrchr(p, '/') + 1 - p), "%s",
             RUNTIME_REGISTRATION);
    unlink(p);
}

static volatile sig_atomic_t dummy;

/* The CDI spec the toolkit writes in CDI mode (CDI_ENABLED=true): the
 * installer runs `nvidia-ctk cdi generate` into /var/run/cdi/nvidia.yaml
 * (nvidia-container-toolkit v1.20.0, cmd/nvidia-ctk-installer/toolkit/
 * toolkit.go, generateCDISpec; kind nvidia.com/gpu, one device per GPU by
 * index and by UUID, and "all"). The stand-in's GPUs are STANDIN_GPU_COUNT
 * fake ones (default 2, as the device plugin stand-in counts them), UUID
 * GPU-STANDIN-<i>; each device's edits add /dev/nvidia<i> (a node of the
 * host's /dev/null) and NVIDIA_STANDIN_GPU_<i>=GPU-STANDIN-<i>, which a
 * test reads inside its container. Removed when the toolkit stops. */
#define CDI_DIR          "/var/run/cdi"
#define CDI_SPEC         CDI_DIR "/nvidia.yaml"
#define CDI_SPEC_MAX     65536
#define STANDIN_GPUS_MAX 64
#define STANDIN_GPUS_DEF 2

static int standin_gpu_count(void)
{
    const char *v = env("STANDIN_GPU_COUNT");
    int n = v ? atoi(v) : STANDIN_GPUS_DEF;
    return n < 0 ? 0 : n > STANDIN_GPUS_MAX ? STANDIN_GPUS_MAX : n;
}

/* cdi_put: appends to b (size n) at *at; past the end it only counts, so
 * *at >= n afterwards means the text did not fit. */
static void cdi_put(char *b, size_t *at, size_t n, const char *fmt, ...)
{
    va_list ap;
    int w;
    va_start(ap, fmt);
    w = vsnprintf(*at < n ? b + *at : NULL, *at < n ? n - *at : 0, fmt, ap);
    va_end(ap);
    *at += w > 0 ? (size_t)w : 0;
}

static void cdi_edits(char *b, size_t *at, size_t n, int first, int last)
{
    int i;
    cdi_put(b, at, n, "  containerEdits:\n    env:\n");
    for (i = first; i <= last; i++)
        cdi_put(b, at, n, "    - NVIDIA_STANDIN_GPU_%d=GPU-STANDIN-%d\n", i, i);
    cdi_put(b, at, n, "    deviceNodes:\n");
    for (i = first; i <= last; i++)
        cdi_put(b, at, n, "    - path: /dev/nvidia%d\n      hostPath: /dev/null\n", i);
}

static int toolkit_write_cdi(void)
{
    static char b[CDI_SPEC_MAX];
    int n = standin_gpu_count(), i;
    size_t at = 0;
    const char *e = env("CDI_ENABLED");
    if (!e || strcmp(e, "true") != 0) {
        say("CDI_ENABLED is not true: no CDI spec written");
        return 0;
    }
    if (need_host_path(CDI_DIR, "the runtime reads the CDI spec from the host"))
        return 1;
    cdi_put(b, &at, sizeof b,
            "# written by the toolkit stand-in (test/lab/standins.c)\n"
            "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n");
    for (i = 0; i < n; i++) {
        cdi_put(b, &at, sizeof b, "- name: \"%d\"\n", i);
        cdi_edits(b, &at, sizeof b, i, i);
        cdi_put(b, &at, sizeof b, "- name: GPU-STANDIN-%d\n", i);
        cdi_edits(b, &at, sizeof b, i, i);
    }
    if (n > 0) {
        cdi_put(b, &at, sizeof b, "- name: all\n");
        cdi_edits(b, &at, sizeof b, 0, n - 1);
    }
    if (at >= sizeof b)
        return die("the CDI spec of %d GPUs does not fit in %d bytes", n, CDI_SPEC_MAX);
    if (write_atomic(CDI_SPEC, b) != 0)
        return die("write %s: %s", CDI_SPEC, strerror(errno));
    say("wrote the CDI spec %s: kind nvidia.com/gpu, %d GPUs (by index, by UUID GPU-STANDIN-<i>, "
        "and all)",
        CDI_SPEC, n);
    return 0;
}

static int toolkit_main(int argc, char **argv)
{
    char ready[FILE_MAX], want[PATH_MAX], p[PATH_MAX], lib[PATH_MAX], smi[PATH_MAX], pid[32];
    const char *root = env("ROOT") ? env("ROOT") : env("TOOLKIT_INSTALL_DIR");
    const char *pidf = env("TOOLKIT_PID_FILE") ? env("TOOLKIT_PID_FILE") : env("PID_FILE");
    const char *droot, *dctr;
    (void)argc;
    (void)argv;
    if (!pidf)
        pidf = "/run/nvidia/toolkit/toolkit.pid";
    if (!root)
        root = "/usr/local/nvidia";
    say("nvidia-ctk-installer starting (stand-in for nvidia-container-toolkit v1.20.0)");
    /* The GPU Operator's entrypoint waits for driver-ready and sources it
     * before exec'ing nvidia-toolkit: starting without it is the bug. */
    if (read_file(VALIDATIONS "/driver-ready", ready, sizeof ready) < 0)
        return die("refusing to start: %s/driver-ready is absent (the driver is not validated)",
                   VALIDATIONS);
    say("check: %s/driver-ready present", VALIDATIONS);
    droot = env("NVIDIA_DRIVER_ROOT") ? env("NVIDIA_DRIVER_ROOT") : env("DRIVER_ROOT");
    dctr = env("DRIVER_ROOT_CTR_PATH");
    if (!droot || !dctr)
        return die("NVIDIA_DRIVER_ROOT/DRIVER_ROOT_CTR_PATH not set (the entrypoint exports them "
                   "from driver-ready)");
    if (kv_get(ready, "NVIDIA_DRIVER_ROOT", want, sizeof want) == 0 && strcmp(want, droot) != 0)
        return die("driver root %s differs from driver-ready's NVIDIA_DRIVER_ROOT=%s", droot, want);
    if (kv_get(ready, "DRIVER_ROOT_CTR_PATH", want, sizeof want) == 0 && strcmp(want, dctr) != 0)
        return die("DRIVER_ROOT_CTR_PATH %s differs from driver-ready's %s", dctr, want);
    say("check: driver root %s (in the container %s) agrees with driver-ready", droot, dctr);
    if (find_in_root(dctr, "libnvidia-ml.so.1", LIB_DIRS, lib, sizeof lib) != 0 ||
        find_in_root(dctr, "nvidia-smi", SMI_DIRS, smi, sizeof smi) != 0)
        return die("no driver under DRIVER_ROOT_CTR_PATH=%s (libnvidia-ml.so.1, nvidia-smi)", dctr);
    say("check: driver files under %s: %s, %s", dctr, lib, smi);
    snprintf(p, sizeof p, "%s", pidf);
    if (strcmp(strrchr(p, '/') ? strrchr(p, '/') + 1 : p, "toolkit.pid") != 0)
        return die("invalid toolkit.pid path %s", pidf);
    if (need_host_path(root, "ROOT: the toolkit is installed for the host's runtime") ||
        need_host_path(pidf, "TOOLKIT_PID_FILE"))
        return 1;
    *strrchr(p, '/') = 0;
    mkdir(p, 0755);
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (write_atomic(pidf, pid) != 0)
        return die("write %s: %s", pidf, strerror(errno));
    say("wrote %s", pidf);
    snprintf(p, sizeof p, "%s/toolkit", root);
    mkdir(p, 0755);
    {
        char installed[PATH_MAX], content[PATH_MAX + 32];
        snprintf(installed, sizeof installed, "%s/toolkit/.gpuop-lab-standin", root);
        snprintf(content, sizeof content, "driver_root=%s\n", droot);
        if (write_atomic(installed, content) != 0)
            return die("install into %s: %s", installed, strerror(errno));
        say("installed the toolkit into %s/toolkit (the lab's nvidia runtime now injects the "
            "driver from %s)",
            root, droot);
        if (toolkit_register(pidf, root, toolkit_runtime_name()) || toolkit_write_cdi())
            return 1;
        wait_signal();
        toolkit_unregister(pidf);
        unlink(installed);
        if (unlink(CDI_SPEC) == 0)
            say("removed the CDI spec %s", CDI_SPEC);
    }
    unlink(pidf);
    say("cleaned up the runtime configuration and %s", pidf);
    return 0;
}

/* ---- device plugin, GFD, config-manager, DCGM exporter ------------------------------- */

/* gated_start: the operand's init container waited for toolkit-ready. The
 * device plugin's main container sees the validations folder (NVIDIA
 * mounts it); GFD's and the DCGM exporter's do not in NVIDIA's pods, so
 * there only the start time (after toolkit-ready was written) shows the
 * gate held. */
static int gated_start(const char *what, int mounted_in_nvidia_pod)
{
    say("%s starting", what);
    /* NVML, injected by the NVIDIA runtime (FAIL_ON_INIT_ERROR: without it
     * the real one exits). */
    if (need_file(NVML, "NVML from the NVIDIA runtime: the toolkit was set up when this container "
                        "was created"))
        return 1;
    if (!mounted_in_nvidia_pod && !is_dir(VALIDATIONS)) {
        say("check: %s not mounted in this container (nor in NVIDIA's pod): the init container "
            "held the gate",
            VALIDATIONS);
        return 0;
    }
    return need_file(VALIDATIONS "/toolkit-ready",
                     "its init container waits for toolkit-ready: the container stack is set up");
}

/* nvidia-device-plugin-gates: what the device plugin checks before it
 * talks to the kubelet. The image's nvidia-device-plugin is the Go
 * stand-in (test/lab/gomod-standins), which runs this first and then
 * registers nvidia.com/gpu with the kubelet; logged as nvidia-device-plugin. */
static int device_plugin_gates_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    me = "nvidia-device-plugin";
    if (gated_start("nvidia-device-plugin (stand-in for k8s-device-plugin v0.20.0)", 1) ||
        need_file(VALIDATIONS "/driver-ready", "the entrypoint sources the driver root from it") ||
        need_host_path("/var/lib/kubelet/device-plugins", "registers with the kubelet there"))
        return 1;
    if (access("/var/lib/kubelet/device-plugins/kubelet.sock", F_OK) != 0)
        return die("/var/lib/kubelet/device-plugins/kubelet.sock absent: the kubelet's socket");
    say("check: kubelet.sock present");
    return 0;
}

static int gfd_main(int argc, char **argv)
{
    const char *dir = "/etc/kubernetes/node-feature-discovery/features.d";
    char p[PATH_MAX];
    (void)argc;
    (void)argv;
    if (gated_start("gpu-feature-discovery (stand-in for k8s-device-plugin v0.20.0)", 0) ||
        need_env("NODE_NAME", "the node it labels") ||
        need_host_path(dir, "NFD reads the feature file from the host"))
        return 1;
    snprintf(p, sizeof p, "%s/gfd", dir);
    if (write_atomic(p, "nvidia.com/gfd.timestamp=0\n") != 0)
        return die("write %s: %s", p, strerror(errno));
    say("wrote %s", p);
    wait_signal();
    unlink(p);
    return 0;
}

/* config-manager (k8s-device-plugin v0.20.0 cmd/config-manager/main.go,
 * updateConfigName, updateSymlink): the node's NODE_LABEL names a file of
 * CONFIG_FILE_SRCDIR (the ConfigMap's keys); without the label
 * DEFAULT_CONFIG; without that the FALLBACK_STRATEGIES (only "empty" here:
 * /dev/null). A name that is not there fails. CONFIG_FILE_DST becomes a
 * link to it. ONESHOT=true ends there (config-manager-init); otherwise it
 * stays, without following later label or ConfigMap changes (the real one
 * watches the node and signals the plugin). */
static int config_manager_pick(const char *label, char *out, size_t n)
{
    const char *dflt = env("DEFAULT_CONFIG"), *srcdir = env("CONFIG_FILE_SRCDIR");
    const char *fb = env("FALLBACK_STRATEGIES");
    char p[PATH_MAX];
    const char *name = label && *label ? label : dflt;
    if (!name) {
        if (!fb || !strstr(fb, "empty"))
            return die("no config was set, no default was provided, and all fallbacks failed");
        snprintf(out, n, "/dev/null");
        say("no value set and no default: the empty config");
        return 0;
    }
    snprintf(p, sizeof p, "%s/%s", srcdir ? srcdir : "/available-configs", name);
    if (!is_file(p))
        return die("specified config %s does not exist (%s)", name, p);
    snprintf(out, n, "%s", p);
    return 0;
}

static int config_manager_main(int argc, char **argv)
{
    const char *o = env("ONESHOT"), *node = env("NODE_NAME"), *key = env("NODE_LABEL");
    const char *dst = env("CONFIG_FILE_DST");
    char path[PATH_MAX], src[PATH_MAX];
    const char *label = NULL;
    json_t *j;
    (void)argc;
    (void)argv;
    say("config-manager ONESHOT=%s", o ? o : "");
    if (need_env("NODE_NAME", "it reads the node's config label"))
        return 1;
    if (key && dst) {
        if (in_cluster_config())
            return 1;
        snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
        if (!(j = api_json(path)))
            return die("could not read node %s", node);
        label = json_string_value(
            json_object_get(json_object_get(json_object_get(j, "metadata"), "labels"), key));
        say("check: node %s label %s=%s", node, key, label ? label : "(none)");
        if (config_manager_pick(label, src, sizeof src)) {
            json_decref(j);
            return 1;
        }
        json_decref(j);
        unlink(dst);
        if (symlink(src, dst) != 0)
            return die("symlink %s -> %s: %s", dst, src, strerror(errno));
        say("updated %s -> %s", dst, src);
    }
    if (o && strcmp(o, "true") == 0)
        return 0;
    wait_signal();
    return 0;
}

/* A minimal HTTP server for the readiness probe (/health) and /metrics. */
static int dcgm_main(int argc, char **argv)
{
    const char *listen_at = env("DCGM_EXPORTER_LISTEN") ? env("DCGM_EXPORTER_LISTEN") : ":9400";
    const char *colon = strrchr(listen_at, ':');
    int port = colon ? atoi(colon + 1) : 9400, s, one = 1;
    struct sockaddr_in a;
    (void)argc;
    (void)argv;
    if (gated_start("dcgm-exporter (stand-in for dcgm-exporter 4.6.0)", 0) ||
        need_env("NODE_NAME", "DCGM_EXPORTER_KUBERNETES maps GPUs to this node's pods"))
        return 1;
    if (env("DCGM_EXPORTER_KUBERNETES") && strcmp(env("DCGM_EXPORTER_KUBERNETES"), "true") == 0 &&
        need_host_path("/var/lib/kubelet/pod-resources", "the kubelet's pod-resources socket"))
        return 1;
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0)
        return die("listen on %s: %s", listen_at, strerror(errno));
    say("serving /health and /metrics on %s", listen_at);
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        char req[1024];
        const char *body;
        char resp[512];
        int c = accept(s, NULL, NULL);
        ssize_t n;
        if (c < 0)
            continue;
        n = read(c, req, sizeof req - 1);
        req[n > 0 ? n : 0] = 0;
        body =
            strncmp(req, "GET /metrics", 12) == 0 ? "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 0\n" : "OK\n";
        snprintf(resp, sizeof resp,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n%s",
                 strlen(body), body);
        if (write(c, resp, strlen(resp)) < 0)
            dummy = 1;
        close(c);
    }
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } applets[] = {
        {"nvidia-driver", driver_main},
        {"nvidia-smi", smi_main},
        {"nvidia-validator", validator_main},
        {"nvidia-ctk-installer", toolkit_main},
        {"nvidia-toolkit", toolkit_main},
        {"nvidia-device-plugin-gates", device_plugin_gates_main},
        {"gpu-feature-discovery", gfd_main},
        {"config-manager", config_manager_main},
        {"dcgm-exporter", dcgm_main},
        {"driver-manager", driver_manager_main},
        {"cos-gpu-installer", cos_installer_main},
    };
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    size_t i;
    if (strcmp(base, "standin") == 0 && argc > 1) {
        argv++;
        argc--;
        base = argv[0];
    }
    for (i = 0; i < sizeof applets / sizeof applets[0]; i++)
        if (strcmp(base, applets[i].name) == 0) {
            me = applets[i].name;
            setvbuf(stdout, NULL, _IOLBF, 0);
            return applets[i].fn(argc, argv);
        }
    fprintf(stderr, "standin: unknown applet '%s'\n", base);
    return 127;
}
