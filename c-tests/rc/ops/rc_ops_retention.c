/*
 * rc_ops group `retention`: AM descriptors the target keeps and releases
 * later. Run alone with `rc_ops -g retention`.
 */
#include "rc_ops.h"

void test_retention(struct ctx *c)
{
    enum { RETAIN = 24 };
    const char *rxq_env = getenv("UCX_RC_RX_QUEUE_LEN");
    unsigned rxq        = rxq_env ? (unsigned)strtoul(rxq_env, NULL, 0) : 4096;
    unsigned filler     = 4 * rxq, filler_len = 512;
    char name[200];
    struct am_plan plan = { 0 };
    unsigned i, bad = 0;
    size_t max_bc = c->attr.cap.am.max_bcopy;
    struct cmd_args r;

    for (i = 0; i < RETAIN; i++) {
        size_t len   = min_sz(8 + 97 * (i + 1), max_bc);
        uint32_t tag = new_tag(c);
        uint8_t *msg = malloc(len);
        make_msg(tag, msg, len);
        if (post_am_bcopy(c, c->ep, AM_RETAIN_ID, msg, len) != (ssize_t)len) {
            bad++;
        } else {
            plan_add(&plan, AM_RETAIN_ID, tag, (uint32_t)len, "retained");
        }
        free(msg);
    }
    /* then enough AMs to cycle every receive buffer several times */
    for (i = 0; i < filler; i++) {
        size_t len   = min_sz(filler_len, max_bc);
        uint32_t tag = new_tag(c);
        uint8_t *msg = malloc(len);
        make_msg(tag, msg, len);
        if (post_am_bcopy(c, c->ep, AM_BCOPY_ID, msg, len) != (ssize_t)len) {
            bad++;
        } else {
            plan_add(&plan, AM_BCOPY_ID, tag, (uint32_t)len, "filler");
        }
        free(msg);
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    am_report_check(c, &plan, 20, 0, "AM retention: retained and filler AMs arrive");
    r = rpc_args(c, CMD_RETAIN_CHECK, 0, 0, 0, 0);
    snprintf(name, sizeof(name),
             "AM retention: UCS_INPROGRESS keeps the descriptor: data intact after %u more AMs "
             "through a %u-entry receive queue, then uct_iface_release_desc", filler, rxq);
    check(c, bad == 0 && r.a == RETAIN && r.b == RETAIN && r.c == 0, name,
          "%" PRIu64 " retained of %d, %" PRIu64 " intact, %" PRIu64 " without "
          "UCT_CB_PARAM_FLAG_DESC, %u posts failed", r.a, RETAIN, r.b, r.c, bad);
    free(plan.e);
    /* after the release, AMs keep flowing (the buffers came back) */
    plan.e = NULL;
    plan.n = plan.cap = 0;
    for (i = 0; i < 500; i++) {
        uint8_t msg[200];
        uint32_t tag = new_tag(c);
        make_msg(tag, msg, sizeof(msg));
        if (post_am_bcopy(c, c->ep, AM_BCOPY_ID, msg, sizeof(msg)) == (ssize_t)sizeof(msg)) {
            plan_add(&plan, AM_BCOPY_ID, tag, sizeof(msg), "after release");
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    am_report_check(c, &plan, 20, 0, "AM retention: AMs keep arriving after the release");
    free(plan.e);
}
