/*
 * world_fixture.c - the shared "world" of the findings-based unit tests
 * (see world_fixture.h). Nodes, DaemonSets and pods go through the same
 * JSON parsers as objects from the API server, so the tests exercise the
 * real model code, not hand-filled structs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "world_fixture.h"

void fx_world_init(struct fx_world *w, int desired, int ready)
{
    memset(w, 0, sizeof(*w));
    w->pol.name = "main";
    for (int i = 0; i < gpuop_operand_count(); i++) {
        w->pol.operands[i].enabled = true;
        const char *ds = gpuop_operand_get(i)->ds_name;
        json_t *j = desired < 0
                        ? json_pack("{s:{s:s}}", "metadata", "name", ds)
                        : json_pack("{s:{s:s}, s:{s:i, s:i}}", "metadata", "name", ds, "status",
                                    "desiredNumberScheduled", desired, "numberReady", ready);
        assert_non_null(j);
        assert_true(w->nds < GPUOP_OPERAND_MAX);
        assert_int_equal(gpuop_ds_from_json(j, &w->ds[w->nds], NULL), 0);
        w->dp[w->nds] = &w->ds[w->nds];
        w->nds++;
        json_decref(j);
    }
}

/* Parses the node from labels (stolen). */
static void add_node(struct fx_world *w, const char *name, json_t *labels)
{
    assert_true(w->nn < FX_MAX_NODES);
    json_t *j = json_pack("{s:{s:s, s:o}}", "metadata", "name", name, "labels", labels);
    assert_non_null(j);
    assert_non_null(w->nodes[w->nn] = gpuop_node_new(j, NULL, NULL));
    w->np[w->nn] = w->nodes[w->nn];
    w->nn++;
    json_decref(j);
}

/* Operand i is a word of the space-separated list ("dcgm" is not in
 * "dcgm-exporter"). */
static bool listed(const char *list, int i)
{
    const char *name = gpuop_operand_get(i)->name;
    size_t n = strlen(name);
    for (const char *s = list; s && (s = strstr(s, name)); s += n)
        if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\0'))
            return true;
    return false;
}

/* Operand i's deploy label; for one without a label of its own (the MPS
 * control daemon, operand.h follow rows) the node label it also needs
 * (nvidia.com/mps.capable), which with its operand's label runs it. */
static void deploy_key(int i, char *key, size_t size)
{
    const struct gpuop_operand_follow *fw = gpuop_operand_follow(i);
    if (fw && fw->also)
        snprintf(key, size, "%s", fw->also);
    else
        snprintf(key, size, "nvidia.com/gpu.deploy.%s", gpuop_operand_get(i)->name);
}

void fx_add_node(struct fx_world *w, const char *name, const char *ops)
{
    json_t *labels = json_pack("{s:s}", "nvidia.com/gpu.present", "true");
    for (int i = 0; i < gpuop_operand_count(); i++) {
        char key[128];
        deploy_key(i, key, sizeof(key));
        if (listed(ops, i))
            json_object_set_new(labels, key, json_string("true"));
    }
    add_node(w, name, labels);
}

void fx_add_node_except(struct fx_world *w, const char *name, const char *except, const char *value)
{
    json_t *labels = json_pack("{s:s}", "nvidia.com/gpu.present", "true");
    for (int i = 0; i < gpuop_operand_count(); i++) {
        char key[128];
        deploy_key(i, key, sizeof(key));
        if (except && strcmp(except, gpuop_operand_get(i)->name) == 0) {
            if (value)
                json_object_set_new(labels, key, json_string(value));
        } else {
            json_object_set_new(labels, key, json_string("true"));
        }
    }
    add_node(w, name, labels);
}

void fx_add_node_values(struct fx_world *w, const char *name, const char *values)
{
    json_t *labels = json_pack("{s:s}", "nvidia.com/gpu.present", "true");
    for (int i = 0; i < gpuop_operand_count(); i++) {
        char key[128];
        deploy_key(i, key, sizeof(key));
        json_object_set_new(labels, key, json_string("true"));
    }
    char buf[512], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", values);
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '='), key[128];
        assert_non_null(eq);
        *eq = '\0';
        int i = gpuop_operand_by_name(tok);
        assert_true(i >= 0);
        deploy_key(i, key, sizeof(key));
        json_object_set_new(labels, key, json_string(eq + 1));
    }
    add_node(w, name, labels);
}

/* A Running, Ready pod of operand i on node. */
static void add_pod(struct fx_world *w, const char *node, int i)
{
    const char *name = gpuop_operand_get(i)->name;
    char pod[128];
    assert_true(w->npods < FX_MAX_PODS);
    snprintf(pod, sizeof(pod), "%s-%s", name, node);
    json_t *j =
        json_pack("{s:{s:s, s:{s:s}}, s:{s:s}, s:{s:s, s:[{s:s, s:s}]}}", "metadata", "name", pod,
                  "labels", "app.kubernetes.io/component", name, "spec", "nodeName", node, "status",
                  "phase", "Running", "conditions", "type", "Ready", "status", "True");
    assert_non_null(j);
    assert_non_null(w->pods[w->npods] = gpuop_pod_new(j, NULL, NULL));
    w->pp[w->npods] = w->pods[w->npods];
    w->npods++;
    json_decref(j);
}

void fx_run(struct fx_world *w, const char *node, const char *ops)
{
    for (int i = 0; i < gpuop_operand_count(); i++)
        if (listed(ops, i))
            add_pod(w, node, i);
}

void fx_run_all(struct fx_world *w, const char *node, const char *skip)
{
    for (int i = 0; i < gpuop_operand_count(); i++)
        if (!listed(skip, i))
            add_pod(w, node, i);
}

void fx_analyze(struct fx_world *w)
{
    fx_analyze_at(w, FX_T0);
}

void fx_analyze_at(struct fx_world *w, long long now)
{
    gpuop_findings_free(&w->f);
    assert_int_equal(gpuop_analyze(&(struct gpuop_analysis_in){.policy = &w->pol,
                                                               .nodes = w->np,
                                                               .nnodes = w->nn,
                                                               .ds = w->dp,
                                                               .nds = w->nds,
                                                               .pods = w->pp,
                                                               .npods = w->npods,
                                                               .now = now},
                                   &w->f),
                     0);
}

void fx_world_free(struct fx_world *w)
{
    gpuop_findings_free(&w->f);
    for (size_t i = 0; i < w->nn; i++)
        gpuop_node_free(w->nodes[i]);
    for (size_t i = 0; i < w->nds; i++)
        gpuop_ds_free(&w->ds[i]);
    for (size_t i = 0; i < w->npods; i++)
        gpuop_pod_free(w->pods[i]);
}
