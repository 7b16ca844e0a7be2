/*
 * leader.h - leader election on a coordination.k8s.io/v1 Lease, with
 * client-go's semantics:
 *
 * - try: GET the Lease; absent -> create it holding it (POST; 409: someone
 *   else was faster). Present and held by another identity whose record
 *   has not changed for leaseDuration on OUR clock -> take it over;
 *   otherwise wait. Expiry is judged from when this process last saw the
 *   record (holderIdentity, renewTime, leaseTransitions, ...) change,
 *   never from the holder's timestamps, so clock skew does not matter.
 *   An empty holderIdentity (released) is taken at once.
 * - every write is a PUT with the resourceVersion last read (optimistic
 *   concurrency): 409 means another replica won the race.
 * - candidates retry every retryPeriod (with up to 20 % jitter); the leader
 *   renews every retryPeriod and must succeed within renewDeadline of its
 *   last successful renewal, else it has lost (on_stopped). A lost leader
 *   never becomes leader again in this process.
 * - release (clean shutdown): the leader writes holderIdentity "" and
 *   leaseDurationSeconds 1 so a successor takes over at once.
 */
#ifndef GPUOP_LEADER_H
#define GPUOP_LEADER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "gpuop/kube.h"

#define GPUOP_LEADER_LEASE_MS  15000
#define GPUOP_LEADER_RENEW_MS  10000
#define GPUOP_LEADER_RETRY_MS  2000
#define GPUOP_LEADER_MAX_IDENT 128

struct gpuop_leader_config {
    const char *namespace; /* of the Lease */
    const char *name;      /* Lease name */
    const char *identity;  /* this replica; NULL: gpuop_leader_identity() */
    uint64_t lease_ms;     /* 0: defaults above */
    uint64_t renew_ms;
    uint64_t retry_ms;
    void (*on_started)(void *arg); /* became leader */
    void (*on_stopped)(void *arg); /* was leader and lost the lease */
    void *arg;
};

struct gpuop_leader;

/* Checks client-go's constraints: lease > renew > 1.2 * retry > 0.
 * Returns 0 or GPUOP_EINVAL. */
int gpuop_leader_check_timing(uint64_t lease_ms, uint64_t renew_ms, uint64_t retry_ms);

/* hostname + "_" + 8 random hex digits, into buf. */
void gpuop_leader_identity(char *buf, size_t len);

/* cfg strings are copied. *out is new. */
int gpuop_leader_new(uv_loop_t *loop, struct gpuop_kube *kube,
                     const struct gpuop_leader_config *cfg, struct gpuop_leader **out);
/* Starts trying at once. */
int gpuop_leader_start(struct gpuop_leader *l);
bool gpuop_leader_is_leader(const struct gpuop_leader *l);
/* The identity of this replica (borrowed). */
const char *gpuop_leader_self(const struct gpuop_leader *l);
/* The holder last seen in the Lease ("" when none; borrowed). */
const char *gpuop_leader_holder(const struct gpuop_leader *l);
/* Number of successful lease writes (acquisitions and renewals). */
uint64_t gpuop_leader_writes(const struct gpuop_leader *l);

/* Stops trying; when leader, first releases the Lease (one PUT, bounded by
 * renewDeadline). cb(arg) runs once l is freed. on_stopped is not called. */
void gpuop_leader_close(struct gpuop_leader *l, void (*cb)(void *arg), void *arg);

#endif
