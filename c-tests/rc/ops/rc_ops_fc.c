/*
 * rc_ops group `fc`: flow control: AM floods far past the window. Run alone
 * with `rc_ops -g fc`.
 */
#include "rc_ops.h"

void test_fc(struct ctx *c)
{
    const char *wnd_env = getenv("UCX_RC_FC_WND_SIZE");
    unsigned wnd = wnd_env ? (unsigned)strtoul(wnd_env, NULL, 0) : 0;
    unsigned n   = (wnd ? wnd : 8) * 250, i, failed_posts = 0;
    struct am_plan plan = { 0 };
    char name[160];

    for (i = 0; i < n; i++) {
        uint8_t msg[64];
        size_t len   = 8 + (i * 7) % 56;
        uint32_t tag = new_tag(c);
        ucs_status_t st;
        make_msg(tag, msg, len);
        if (i % 2 == 0) {
            st = post_am_short(c, c->ep, AM_SHORT_ID, msg, len);
        } else {
            st = post_am_bcopy(c, c->ep, AM_BCOPY_ID, msg, len) == (ssize_t)len ? UCS_OK
                                                                                : UCS_ERR_IO_ERROR;
        }
        if (st == UCS_OK) {
            plan_add(&plan, i % 2 ? AM_BCOPY_ID : AM_SHORT_ID, tag, (uint32_t)len, "fc");
        } else {
            failed_posts++;
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    snprintf(name, sizeof(name),
             "flow control: %u AMs, %ux UCX_RC_FC_WND_SIZE=%s, to a receiver that keeps up", n,
             n / (wnd ? wnd : 8), wnd_env ? wnd_env : "(unset)");
    if (failed_posts) {
        check(c, 0, name, "%u posts failed", failed_posts);
    }
    am_report_check(c, &plan, 20, 0, name);
    free(plan.e);

    /* a receiver that stops progressing for a while, then resumes */
    plan.e = NULL;
    plan.n = plan.cap = 0;
    {
        struct cmd_args args = { 300, 0, 0, 0 };
        unsigned m           = (wnd ? wnd : 8) * 16;
        msg_send(c, CMD_PAUSE, &args, sizeof(args));
        for (i = 0; i < m; i++) {
            uint8_t msg[40];
            uint32_t tag = new_tag(c);
            make_msg(tag, msg, sizeof(msg));
            if (post_am_short(c, c->ep, AM_SHORT_ID, msg, sizeof(msg)) == UCS_OK) {
                plan_add(&plan, AM_SHORT_ID, tag, sizeof(msg), "fc paused");
            }
        }
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        {
            uint32_t type;
            size_t len;
            free(msg_recv(c, &type, &len)); /* the pause is over */
        }
        snprintf(name, sizeof(name),
                 "flow control: %u AMs to a receiver that paused 300 ms, all arrive once, in order",
                 m);
        am_report_check(c, &plan, 20, 0, name);
        free(plan.e);
    }
}
