/*
 * rc_ops group `empty`: every op with nothing to move (length 0, iovcnt 0).
 * Run alone with `rc_ops -g empty`.
 */
#include "rc_ops.h"

/* Every op with nothing to move (UCX allows length 0 / iovcnt 0): accepted,
 * completed, no byte written; the AM ops deliver an empty AM. */
void test_empty(struct ctx *c)
{
    size_t off    = talloc(c, 0);
    uint64_t raddr = c->peer_base + off, rkey = c->peer_rkey.rkey;
    uint8_t *buf  = lalloc(c, 64);
    struct pack_arg empty = { buf, 0 };
    struct unpack_arg ua  = { buf, 0, 0 };
    struct am_plan plan   = { 0 };
    struct comp cp;
    ucs_status_t st;
    ssize_t n;
    char why[256] = "";

#define EMPTY_CHECK(label, post, with_comp) \
    do { \
        comp_init(&cp); \
        st = POST(c, post); \
        if ((with_comp) && st == UCS_INPROGRESS) { \
            wait_calls(c, &cp.calls, 1, c->wait_s); \
        } \
        progress_for(c, 1); \
        if (st != UCS_OK && st != UCS_INPROGRESS) { \
            check(c, 0, "zero length: " label, "returned %s", ucs_status_string(st)); \
        } else if ((with_comp) && !comp_ok(&cp, st, why, sizeof(why))) { \
            check(c, 0, "zero length: " label, "%s", why); \
        } else { \
            check(c, 1, "zero length: " label, "%s", ucs_status_string(st)); \
        } \
    } while (0)

    EMPTY_CHECK("put_short", uct_ep_put_short(c->ep, buf, 0, raddr, rkey), 0);
    EMPTY_CHECK("put_zcopy, iovcnt 0", uct_ep_put_zcopy(c->ep, NULL, 0, raddr, rkey, &cp.uc), 1);
    EMPTY_CHECK("get_bcopy", uct_ep_get_bcopy(c->ep, unpack_cb, &ua, 0, raddr, rkey, &cp.uc), 1);
    EMPTY_CHECK("get_zcopy, iovcnt 0", uct_ep_get_zcopy(c->ep, NULL, 0, raddr, rkey, &cp.uc), 1);
    if (c->attr.cap.flags & UCT_IFACE_FLAG_GET_SHORT) {
        EMPTY_CHECK("get_short", uct_ep_get_short(c->ep, buf, 0, raddr, rkey), 0);
    }
    n = uct_ep_put_bcopy(c->ep, pack_cb, &empty, raddr, rkey);
    check(c, n == 0, "zero length: put_bcopy packing 0 bytes", "returned %zd", n);
    EMPTY_CHECK("am_short_iov, iovcnt 0", uct_ep_am_short_iov(c->ep, AM_IOV_ID, NULL, 0), 0);
    if (st == UCS_OK) {
        plan_add(&plan, AM_IOV_ID, 0, 0, "empty am_short_iov");
    }
    n = post_am_bcopy(c, c->ep, AM_BCOPY_ID, buf, 0);
    check(c, n == 0, "zero length: am_bcopy packing 0 bytes", "returned %zd", n);
    if (n == 0) {
        plan_add(&plan, AM_BCOPY_ID, 0, 0, "empty am_bcopy");
    }
    EMPTY_CHECK("am_zcopy, no header, iovcnt 0",
                uct_ep_am_zcopy(c->ep, AM_ZCOPY_ID, NULL, 0, NULL, 0, 0, &cp.uc), 1);
    if (st == UCS_OK || st == UCS_INPROGRESS) {
        plan_add(&plan, AM_ZCOPY_ID, 0, 0, "empty am_zcopy");
    }
#undef EMPTY_CHECK
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    check(c, target_mem_is(c, off, 0, BG_TAG, GUARD, why, sizeof(why)),
          "zero length: the target's bytes at the remote address are untouched", "%s", why);
    am_report_check(c, &plan, 20, 0, "zero length: the empty AMs arrive once, in order, empty");
    free(plan.e);
}
