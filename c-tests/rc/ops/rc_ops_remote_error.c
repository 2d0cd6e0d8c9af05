/*
 * rc_ops group `remote_error`: a put outside the target's registration (a
 * second ep pair). Run alone with `rc_ops -g remote_error`.
 */
#include "rc_ops.h"

/* A put outside the target's registration: the target refuses it (remote
 * access error), the ep fails once, with the error handler called once, the
 * op after it completes with the error, new posts fail, nothing was written,
 * and the main ep pair is unaffected. Runs on a second ep pair. */
void test_remote_error(struct ctx *c)
{
    uint64_t v = 0x1122334455667788ull;
    size_t off = talloc(c, 256);
    uint8_t *src = lalloc(c, 256);
    uct_iov_t iov;
    struct comp cp;
    ucs_status_t st_bad, st_next, st_after;
    double deadline;
    unsigned idle = 0;
    char why[256] = "";
    struct am_plan plan = { 0 };

    st_bad = connect_ep2(c);
    if (st_bad != UCS_OK) {
        check(c, 0, "remote access error", "a second ep pair: %s", ucs_status_string(st_bad));
        return;
    }
    fill_pat(new_tag(c), src, 256, 0);
    make_iov(c, &iov, 1, src, 256);
    comp_init(&cp);
    /* past the end of the target's registered region */
    st_bad  = POST(c, uct_ep_put_short(c->ep2, &v, 8, c->peer_base + c->peer_len + 4096,
                                       c->peer_rkey.rkey));
    st_next = POST(c, uct_ep_put_zcopy(c->ep2, &iov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                       &cp.uc));
    deadline = oob_now_s() + c->wait_s;
    while ((c->ep2_err_calls == 0 || (st_next == UCS_INPROGRESS && cp.calls == 0)) &&
           oob_now_s() < deadline) {
        progress_idle(c, &idle);
    }
    progress_for(c, 50);
    check(c, c->ep2_err_calls == 1 && c->ep2_err_status != UCS_OK,
          "remote access error: the error handler runs once for the ep",
          "put_short returned %s; %u calls, status %s", ucs_status_string(st_bad),
          c->ep2_err_calls, ucs_status_string(c->ep2_err_status));
    check(c, st_next == UCS_INPROGRESS && cp.calls == 1 && cp.status != UCS_OK,
          "remote access error: the op posted after it completes once, with an error",
          "posted %s, %d calls, status %s", ucs_status_string(st_next), cp.calls,
          ucs_status_string(cp.status));
    st_after = uct_ep_put_short(c->ep2, &v, 8, c->peer_base + off, c->peer_rkey.rkey);
    check(c, st_after != UCS_OK && st_after != UCS_INPROGRESS &&
                     st_after != UCS_ERR_NO_RESOURCE,
          "remote access error: posts on the failed ep return its error", "returned %s",
          ucs_status_string(st_after));
    check(c, target_mem_is(c, off, 256, BG_TAG, GUARD, why, sizeof(why)),
          "remote access error: nothing of the failed ep's ops was written", "%s", why);
    destroy_ep2(c);
    post_data_am(c, &plan, OP_AM_SHORT, 32, NULL, NULL, "after the error");
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    am_report_check(c, &plan, 0, 0, "remote access error: the main ep pair still works");
    free(plan.e);
}
