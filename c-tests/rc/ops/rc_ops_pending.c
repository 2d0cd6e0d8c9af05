/*
 * rc_ops group `pending`: a full ring and uct_ep_pending_add. Run alone with
 * `rc_ops -g pending`.
 */
#include "rc_ops.h"

void test_pending(struct ctx *c)
{
    enum { N = 3000 };
    struct pend *ps     = calloc(N, sizeof(*ps));
    struct am_plan plan = { 0 };
    unsigned i, direct = 0, queued = 0, no_resource = 0, bad = 0, bad_puts = 0, n_puts = 0;
    int pending_mode = 0;
    double deadline;
    unsigned idle = 0;

    /* puts without progress until the send ring (or the CQ credits) runs
     * out; then puts and AMs alternate, all through the pending queue (AMs
     * alone would meet the flow-control window first) */
    for (i = 0; i < N; i++) {
        struct pend *p = &ps[i];
        ucs_status_t st;
        p->c        = c;
        p->seq      = i;
        p->tag      = new_tag(c);
        p->req.func = pend_cb;
        p->put_off  = talloc(c, 24);
        if (!pending_mode) {
            st = pend_post(p);
            if (st == UCS_OK) {
                p->posted++;
                direct++;
                continue;
            }
            if (st != UCS_ERR_NO_RESOURCE) {
                check(c, 0, "pending: post", "op %u returned %s", i, ucs_status_string(st));
                bad++;
                continue;
            }
            no_resource++;
            pending_mode = 1;
        }
        p->is_am = i % 2 == 0;
        if (p->is_am) {
            plan_add(&plan, AM_SHORT_ID, p->tag, 32, "pending");
        }
        /* from the first NO_RESOURCE on, everything queues (keeps order) */
        for (;;) {
            ucs_status_t st2 = uct_ep_pending_add(c->ep, &p->req, 0);
            if (st2 == UCS_OK) {
                queued++;
                break;
            }
            if (st2 == UCS_ERR_BUSY) {
                /* resources came back and the queue is empty: post now */
                st2 = pend_post(p);
                if (st2 == UCS_OK) {
                    p->posted++;
                    direct++;
                    break;
                }
                if (st2 == UCS_ERR_NO_RESOURCE) {
                    continue;
                }
            }
            check(c, 0, "pending: pending_add", "op %u: %s", i, ucs_status_string(st2));
            bad++;
            break;
        }
    }
    check(c, no_resource > 0 && queued > 0, "pending: a full send queue returns NO_RESOURCE",
          "%u puts posted before the first NO_RESOURCE, %u ops queued with uct_ep_pending_add",
          direct, queued);
    if (queued > 0) {
        /* nothing progressed since: the queue is still there */
        ucs_status_t fst = uct_ep_flush(c->ep, UCT_FLUSH_FLAG_LOCAL, NULL);
        check(c, fst == UCS_ERR_NO_RESOURCE,
              "pending: ep flush with requests pending returns NO_RESOURCE", "returned %s",
              ucs_status_string(fst));
    }
    /* progress dispatches the queue */
    deadline = oob_now_s() + c->wait_s;
    for (;;) {
        unsigned done = 0;
        for (i = 0; i < N; i++) {
            done += ps[i].posted > 0;
        }
        if (done == N || oob_now_s() > deadline) {
            break;
        }
        progress_idle(c, &idle);
    }
    if (flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL) != UCS_OK) {
        bad++;
    }
    progress_for(c, 2);
    {
        unsigned never = 0, twice = 0, ran = 0;
        for (i = 0; i < N; i++) {
            never += ps[i].posted == 0;
            twice += ps[i].posted > 1;
            ran += ps[i].runs > 0;
        }
        check(c, never == 0 && twice == 0 && ran == queued,
              "pending: every pending callback ran and posted exactly once",
              "%u queued, %u callbacks ran, %u never posted, %u posted twice", queued, ran, never,
              twice);
    }
    am_report_check(c, &plan, 20, 0, "pending: queued AMs arrive once, in posting order");
    {
        /* every put, checked at the target in one command */
        struct cmd_args *ranges = calloc(N, sizeof(*ranges));
        struct cmd_args r;
        size_t n_ranges = 0, rlen;
        void *reply;
        for (i = 0; i < N; i++) {
            if (ps[i].is_am) {
                continue;
            }
            ranges[n_ranges].a = ps[i].put_off;
            ranges[n_ranges].b = 24;
            ranges[n_ranges].c = ps[i].tag;
            ranges[n_ranges].d = 8;
            n_ranges++;
        }
        reply = rpc(c, CMD_CHECK_BATCH, ranges, n_ranges * sizeof(*ranges), &rlen);
        memcpy(&r, reply, sizeof(r));
        free(reply);
        free(ranges);
        bad_puts = (unsigned)r.a;
        if (bad_puts > 0) {
            fprintf(stderr, "  pending: %u puts wrong at the target, the first is put #%" PRIu64
                            "\n", bad_puts, r.b);
        }
        n_puts = (unsigned)n_ranges;
    }
    check(c, bad_puts == 0 && bad == 0, "pending: every put landed at the target",
          "%u of %u wrong", bad_puts, n_puts);
    free(ps);
    free(plan.e);
}
