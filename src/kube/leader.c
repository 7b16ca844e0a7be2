/*
 * leader.c - Lease-based leader election (see leader.h).
 *
 * One timer drives everything; at most one request is in flight.
 *
 *   tick ─┬─ leader, lease cached ──> PUT renewal ──ok──> leader, tick in retry
 *         │                                     └─409──> GET (re-judge)
 *         └─ otherwise ──> GET ──404──> POST create ──ok──> leader
 *                           └─ judge: held by another, record changed less
 *                              than leaseDuration ago (local clock)? wait
 *                              : PUT acquire (409: lost the race, wait)
 *
 * The leader checks at every tick (and before every renewal) that its last
 * successful write is younger than renewDeadline; a renewal in flight past
 * that is cancelled and leadership is lost. Expiry is judged with uv_now
 * (monotonic) against the moment the record last changed as seen here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "gpuop/jsonarena.h"
#include "gpuop/leader.h"
#include "gpuop/log.h"

/* client-go's JitterFactor: renewDeadline must exceed retryPeriod times
 * it, and a candidate waits retryPeriod plus up to (JITTER_FACTOR - 1)
 * of it between tries, so that candidates spread out. */
#define JITTER_FACTOR 1.2
/* While a request is out, the leader looks at its renew deadline this
 * many times per retry period. */
#define DEADLINE_CHECKS_PER_RETRY 2
/* A release that meets 409 (our last renewal landed after all) reads the
 * Lease and tries again, this many tries in all. */
#define RELEASE_TRIES 2

struct gpuop_leader {
    uv_loop_t *loop;
    struct gpuop_kube *kube;
    char *path_coll, *path_obj;
    char obj[300]; /* "lease/ns/name", for logs */
    char *ns, *name;
    char self[GPUOP_LEADER_MAX_IDENT];
    uint64_t lease_ms, renew_ms, retry_ms;
    void (*on_started)(void *);
    void (*on_stopped)(void *);
    void *arg;

    uv_timer_t timer;
    struct gpuop_kube_req *req;
    bool started, leader, lost, closing, releasing;
    int release_tries;
    json_t *lease;  /* last Lease read or written (new ref), or NULL */
    char *observed; /* compact dump of the last spec seen (json_dumps: gpuop_json_free) */
    uint64_t observed_ms;
    uint64_t renewed_ms; /* last successful acquire/renew */
    char holder[GPUOP_LEADER_MAX_IDENT];
    uint64_t writes;
    void (*close_cb)(void *);
    void *close_arg;
};

static void try_once(struct gpuop_leader *l);
static void release(struct gpuop_leader *l);

int gpuop_leader_check_timing(uint64_t lease_ms, uint64_t renew_ms, uint64_t retry_ms)
{
    if (retry_ms == 0 || renew_ms == 0 || lease_ms <= renew_ms ||
        (double)renew_ms <= JITTER_FACTOR * (double)retry_ms)
        return GPUOP_EINVAL;
    return 0;
}

void gpuop_leader_identity(char *buf, size_t len)
{
    char host[64] = "";
    if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
        snprintf(host, sizeof(host), "gpuop");
    host[sizeof(host) - 1] = '\0';
    unsigned char r[4] = {0};
    if (uv_random(NULL, NULL, r, sizeof(r), 0, NULL) < 0) {
        unsigned v = (unsigned)uv_hrtime() ^ (unsigned)getpid();
        memcpy(r, &v, sizeof(r));
    }
    snprintf(buf, len, "%s_%02x%02x%02x%02x", host, r[0], r[1], r[2], r[3]);
}

/* RFC 3339 with microseconds, as metav1.MicroTime wants. */
static void micro_time(char *buf, size_t len)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%06ldZ", (long)tv.tv_usec);
}

static void on_tick(uv_timer_t *t);

/* A request's timeout: the leader's are bounded by the renew deadline (a
 * renewal still out past it is cancelled and leadership is lost anyway);
 * a candidate's carry none of their own beyond the client's default, as in
 * client-go: a slow answer costs a candidate nothing but time, and a short
 * bound only made it retry on a loaded machine. Closing (release) is
 * bounded too. */
static long request_timeout(const struct gpuop_leader *l)
{
    return l->leader || l->closing ? (long)l->renew_ms : 0;
}

/* Reads the Lease; done hears of it. */
static int get_lease(struct gpuop_leader *l, gpuop_kube_done_cb done)
{
    struct gpuop_kube_opts o = {
        .verb = GPUOP_KUBE_GET, .path = l->path_obj, .timeout_ms = request_timeout(l)};
    return gpuop_kube_request(l->kube, &o, done, l, &l->req);
}

static void schedule_in(struct gpuop_leader *l, uint64_t ms)
{
    if (l->closing || l->lost)
        return;
    uv_timer_start(&l->timer, on_tick, ms, 0);
}

static uint64_t jittered(const struct gpuop_leader *l)
{
    unsigned char r = 0;
    if (uv_random(NULL, NULL, &r, 1, 0, NULL) < 0)
        r = 0;
    return l->retry_ms + (uint64_t)((double)l->retry_ms * (JITTER_FACTOR - 1.0) * r / 255.0);
}

/* Records what the Lease says; a changed spec restarts the expiry clock. */
static void observe(struct gpuop_leader *l, json_t *lease /* borrowed */)
{
    json_t *spec = json_object_get(lease, "spec");
    json_t *none = spec ? NULL : json_object(); /* no spec: "{}" */
    char *dump = json_dumps(spec ? spec : none, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(none);
    if (!dump)
        return;
    if (!l->observed || strcmp(dump, l->observed) != 0) {
        gpuop_json_free(l->observed);
        l->observed = dump;
        l->observed_ms = uv_now(l->loop);
    } else {
        gpuop_json_free(dump);
    }
    const char *h = json_string_value(json_object_get(spec, "holderIdentity"));
    if (strcmp(l->holder, h ? h : "") != 0) {
        snprintf(l->holder, sizeof(l->holder), "%s", h ? h : "");
        if (l->holder[0] && strcmp(l->holder, l->self) != 0)
            gpuop_info(l->obj, "the leader is %s; waiting", l->holder);
        else if (!l->holder[0])
            gpuop_info(l->obj, "the lease is free");
    }
    json_decref(l->lease);
    l->lease = json_incref(lease);
}

static void lose(struct gpuop_leader *l, const char *why)
{
    if (!l->leader)
        return;
    l->leader = false;
    l->lost = true;
    uv_timer_stop(&l->timer);
    gpuop_error(l->obj, "lost leadership: %s", why);
    if (l->req) {
        struct gpuop_kube_req *r = l->req;
        l->req = NULL;
        gpuop_kube_cancel(r);
    }
    if (l->on_stopped)
        l->on_stopped(l->arg);
}

static void wrote(struct gpuop_leader *l, json_t *body)
{
    if (body)
        observe(l, body);
    l->renewed_ms = uv_now(l->loop);
    l->writes++;
    if (!l->leader) {
        l->leader = true;
        gpuop_info(l->obj, "became leader as %s", l->self);
        if (l->on_started)
            l->on_started(l->arg);
    } else {
        gpuop_debug(l->obj, "renewed");
    }
    schedule_in(l, l->retry_ms);
}

static void write_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_leader *l = arg;
    l->req = NULL;
    if (rc == GPUOP_ECANCELED || l->closing || l->lost)
        return;
    if (rc == 0) {
        wrote(l, body);
        return;
    }
    if (rc == GPUOP_ECONFLICT) {
        /* Someone else wrote in between: read again and judge. */
        gpuop_debug(l->obj, "conflict writing the lease; reading it again");
        json_decref(l->lease);
        l->lease = NULL;
        schedule_in(l, l->leader ? 0 : jittered(l));
        return;
    }
    gpuop_warn(l->obj, "cannot write the lease: %s", err->message);
    schedule_in(l, l->leader ? l->retry_ms : jittered(l));
}

static json_t *new_spec(struct gpuop_leader *l, json_t *old_spec, bool take)
{
    char now[40];
    micro_time(now, sizeof(now));
    const char *old_holder = json_string_value(json_object_get(old_spec, "holderIdentity"));
    bool mine = old_holder && strcmp(old_holder, l->self) == 0;
    json_int_t transitions = json_integer_value(json_object_get(old_spec, "leaseTransitions"));
    const char *acquired = json_string_value(json_object_get(old_spec, "acquireTime"));
    /* As client-go: every acquisition by a replica that was not the holder
     * counts as a transition, also after a release. */
    if (!take)
        return json_pack("{s:s, s:i, s:s, s:s, s:I}", "holderIdentity", "", "leaseDurationSeconds",
                         1, "acquireTime", now, "renewTime", now, "leaseTransitions", transitions);
    return json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", l->self, "leaseDurationSeconds",
                     (json_int_t)((l->lease_ms + 999) / 1000), "acquireTime",
                     mine && acquired ? acquired : now, "renewTime", now, "leaseTransitions",
                     mine || !old_spec ? transitions : transitions + 1);
}

/* PUT of the cached lease with a new spec (take: hold it; else release). */
static int put_lease(struct gpuop_leader *l, bool take, gpuop_kube_done_cb done)
{
    json_t *obj = json_deep_copy(l->lease);
    json_t *spec = obj ? new_spec(l, json_object_get(obj, "spec"), take) : NULL;
    if (!spec || json_object_set_new(obj, "spec", spec) < 0) {
        json_decref(obj);
        return GPUOP_ENOMEM;
    }
    char *body = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!body)
        return GPUOP_ENOMEM;
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_PUT,
                                .path = l->path_obj,
                                .body = body,
                                .body_len = strlen(body),
                                .timeout_ms = request_timeout(l)};
    int rc = gpuop_kube_request(l->kube, &o, done, l, &l->req);
    gpuop_json_free(body);
    return rc;
}

static void create(struct gpuop_leader *l)
{
    json_t *spec = new_spec(l, NULL, true);
    json_t *obj = spec ? json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion",
                                   "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                                   l->name, "namespace", l->ns, "spec", spec)
                       : NULL;
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_POST,
                                .path = l->path_coll,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .timeout_ms = request_timeout(l)};
    int rc = body ? gpuop_kube_request(l->kube, &o, write_done, l, &l->req) : GPUOP_ENOMEM;
    gpuop_json_free(body);
    if (rc < 0) {
        gpuop_warn(l->obj, "cannot create the lease: %s", gpuop_strerror(rc));
        schedule_in(l, jittered(l));
    }
}

static void get_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_leader *l = arg;
    l->req = NULL;
    if (rc == GPUOP_ECANCELED || l->closing || l->lost)
        return;
    if (rc == GPUOP_ENOTFOUND) {
        if (l->leader) {
            lose(l, "the lease was deleted");
            return;
        }
        create(l);
        return;
    }
    if (rc < 0 || !json_is_object(body)) {
        gpuop_warn(l->obj, "cannot read the lease: %s", rc < 0 ? err->message : "not an object");
        schedule_in(l, l->leader ? l->retry_ms : jittered(l));
        return;
    }
    observe(l, body);
    uint64_t now = uv_now(l->loop);
    bool other = l->holder[0] && strcmp(l->holder, l->self) != 0;
    if (other && now - l->observed_ms < l->lease_ms) {
        if (l->leader) {
            lose(l, "another replica holds the lease");
            return;
        }
        schedule_in(l, jittered(l));
        return;
    }
    if (other)
        gpuop_info(l->obj, "the lease of %s expired (no change seen for %.1f s); taking over",
                   l->holder, (double)(now - l->observed_ms) / 1000.0);
    rc = put_lease(l, true, write_done);
    if (rc < 0) {
        gpuop_warn(l->obj, "cannot update the lease: %s", gpuop_strerror(rc));
        schedule_in(l, l->leader ? l->retry_ms : jittered(l));
    }
}

static void try_once(struct gpuop_leader *l)
{
    if (l->leader && uv_now(l->loop) - l->renewed_ms > l->renew_ms) {
        lose(l, "no successful renewal within the renew deadline");
        return;
    }
    if (l->leader && l->lease) {
        int rc = put_lease(l, true, write_done);
        if (rc == 0)
            return;
        gpuop_warn(l->obj, "cannot renew the lease: %s", gpuop_strerror(rc));
        schedule_in(l, l->retry_ms);
        return;
    }
    int rc = get_lease(l, get_done);
    if (rc < 0) {
        gpuop_warn(l->obj, "cannot read the lease: %s", gpuop_strerror(rc));
        schedule_in(l, l->leader ? l->retry_ms : jittered(l));
    }
}

static void on_tick(uv_timer_t *t)
{
    struct gpuop_leader *l = t->data;
    if (l->closing || l->lost)
        return;
    if (l->req) {
        /* A request is still out: only the renew deadline matters now. */
        if (l->leader && uv_now(l->loop) - l->renewed_ms > l->renew_ms)
            lose(l, "lease renewal did not complete within the renew deadline");
        else
            schedule_in(l, l->retry_ms / DEADLINE_CHECKS_PER_RETRY + 1);
        return;
    }
    try_once(l);
}

int gpuop_leader_new(uv_loop_t *loop, struct gpuop_kube *kube,
                     const struct gpuop_leader_config *cfg, struct gpuop_leader **out)
{
    struct gpuop_leader *l = calloc(1, sizeof(*l));
    if (!l)
        return GPUOP_ENOMEM;
    l->loop = loop;
    l->kube = kube;
    l->lease_ms = cfg->lease_ms ? cfg->lease_ms : GPUOP_LEADER_LEASE_MS;
    l->renew_ms = cfg->renew_ms ? cfg->renew_ms : GPUOP_LEADER_RENEW_MS;
    l->retry_ms = cfg->retry_ms ? cfg->retry_ms : GPUOP_LEADER_RETRY_MS;
    if (!cfg->namespace || !cfg->name || !*cfg->namespace || !*cfg->name ||
        gpuop_leader_check_timing(l->lease_ms, l->renew_ms, l->retry_ms) < 0) {
        free(l);
        return GPUOP_EINVAL;
    }
    if (cfg->identity && *cfg->identity)
        snprintf(l->self, sizeof(l->self), "%s", cfg->identity);
    else
        gpuop_leader_identity(l->self, sizeof(l->self));
    l->ns = strdup(cfg->namespace);
    l->name = strdup(cfg->name);
    struct gpuop_kube_ref lease = {.group_version = "coordination.k8s.io/v1",
                                   .ns = cfg->namespace,
                                   .resource = "leases",
                                   .name = cfg->name};
    l->path_obj = gpuop_kube_path(&lease, NULL, 0);
    lease.name = NULL;
    l->path_coll = gpuop_kube_path(&lease, NULL, 0);
    if (!l->ns || !l->name || !l->path_coll || !l->path_obj) {
        free(l->ns);
        free(l->name);
        free(l->path_coll);
        free(l->path_obj);
        free(l);
        return GPUOP_ENOMEM;
    }
    snprintf(l->obj, sizeof(l->obj), "lease/%s/%s", l->ns, l->name);
    l->on_started = cfg->on_started;
    l->on_stopped = cfg->on_stopped;
    l->arg = cfg->arg;
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    *out = l;
    return 0;
}

int gpuop_leader_start(struct gpuop_leader *l)
{
    if (l->started || l->closing)
        return GPUOP_EINVAL;
    l->started = true;
    gpuop_info(l->obj, "trying to become leader as %s", l->self);
    uv_timer_start(&l->timer, on_tick, 0, 0);
    return 0;
}

bool gpuop_leader_is_leader(const struct gpuop_leader *l)
{
    return l->leader;
}

const char *gpuop_leader_self(const struct gpuop_leader *l)
{
    return l->self;
}

const char *gpuop_leader_holder(const struct gpuop_leader *l)
{
    return l->holder;
}

uint64_t gpuop_leader_writes(const struct gpuop_leader *l)
{
    return l->writes;
}

/* ---- closing ---- */

static void timer_closed(uv_handle_t *h)
{
    struct gpuop_leader *l = h->data;
    void (*cb)(void *) = l->close_cb;
    void *arg = l->close_arg;
    json_decref(l->lease);
    gpuop_json_free(l->observed);
    free(l->ns);
    free(l->name);
    free(l->path_coll);
    free(l->path_obj);
    free(l);
    if (cb)
        cb(arg);
}

static void finish_close(struct gpuop_leader *l)
{
    l->leader = false;
    uv_close((uv_handle_t *)&l->timer, timer_closed);
}

static void release_get_done(void *arg, int rc, json_t *body, const struct gpuop_err *err);

static void release_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_leader *l = arg;
    l->req = NULL;
    if (rc == 0) {
        gpuop_info(l->obj, "released the lease");
    } else if (rc == GPUOP_ECONFLICT && l->release_tries < RELEASE_TRIES) {
        /* Our last renewal may have landed after all: read and retry. */
        if (get_lease(l, release_get_done) == 0)
            return;
    } else {
        gpuop_warn(l->obj, "could not release the lease: %s",
                   err && err->message[0] ? err->message : gpuop_strerror(rc));
    }
    finish_close(l);
}

static void release_get_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_leader *l = arg;
    l->req = NULL;
    const char *h =
        json_string_value(json_object_get(json_object_get(body, "spec"), "holderIdentity"));
    if (rc == 0 && h && strcmp(h, l->self) == 0) {
        json_decref(l->lease);
        l->lease = json_incref(body);
        release(l);
        return;
    }
    if (rc == 0)
        gpuop_info(l->obj, "the lease is no longer ours; nothing to release");
    finish_close(l);
}

static void release(struct gpuop_leader *l)
{
    l->release_tries++;
    int rc = put_lease(l, false, release_done);
    if (rc < 0) {
        gpuop_warn(l->obj, "could not release the lease: %s", gpuop_strerror(rc));
        finish_close(l);
    }
}

void gpuop_leader_close(struct gpuop_leader *l, void (*cb)(void *), void *arg)
{
    l->closing = true;
    l->close_cb = cb;
    l->close_arg = arg;
    uv_timer_stop(&l->timer);
    if (l->req) {
        struct gpuop_kube_req *r = l->req;
        l->req = NULL;
        gpuop_kube_cancel(r);
    }
    if (l->leader && l->lease) {
        release(l);
    } else if (l->leader) {
        l->release_tries++;
        if (get_lease(l, release_get_done) < 0)
            finish_close(l);
    } else {
        finish_close(l);
    }
}
