/*
 * rc_ops group `destroyed_ep`: ops on a destroyed ep's stale handle (a
 * second ep pair). Run alone with `rc_ops -g destroyed_ep`.
 */
#include "rc_ops.h"

/* A destroyed ep (a second pair, destroyed on this side only): every op on
 * its stale handle returns UCS_ERR_INVALID_PARAM and does nothing — no pack
 * or purge callback, no completion, nothing at the target. Built against
 * UCX's headers these calls are UCX's inline functions: they read the
 * handle's iface pointer themselves, which must stay readable (the library
 * keeps a tombstone until the iface closes). */
static unsigned destroyed_callbacks;

static size_t destroyed_pack_cb(void *dest, void *arg)
{
    (void)dest;
    (void)arg;
    destroyed_callbacks++;
    return 8;
}

static void destroyed_purge_cb(uct_pending_req_t *req, void *arg)
{
    (void)req;
    (void)arg;
    destroyed_callbacks++;
}

void test_destroyed_ep(struct ctx *c)
{
    size_t off    = talloc(c, 256);
    uint8_t *src  = lalloc(c, 256);
    uint64_t rkey = c->peer_rkey.rkey, raddr = c->peer_base + off, v = 7;
    struct am_plan none = { 0 };
    struct pend pending;
    uct_iov_t iov;
    struct comp cp;
    ucs_status_t st;
    ssize_t n;
    uct_ep_h dead;
    char why[256] = "";

    st = connect_ep2(c);
    if (st != UCS_OK) {
        check(c, 0, "destroyed ep", "a second ep pair: %s", ucs_status_string(st));
        return;
    }
    dead   = c->ep2;
    c->ep2 = NULL;
    uct_ep_destroy(dead);
    destroyed_callbacks = 0;
    fill_pat(new_tag(c), src, 256, 0);
    make_iov(c, &iov, 1, src, 256);
    comp_init(&cp);
    memset(&pending, 0, sizeof(pending));
    pending.req.func = pend_cb;
    pending.c        = c;
#define EXPECT_DESTROYED(label, expr) \
    do { \
        st = (expr); \
        check(c, st == UCS_ERR_INVALID_PARAM, "destroyed ep: " label, "returned %s (want %s)", \
              ucs_status_string(st), ucs_status_string(UCS_ERR_INVALID_PARAM)); \
    } while (0)
    EXPECT_DESTROYED("put_short", uct_ep_put_short(dead, src, 8, raddr, rkey));
    EXPECT_DESTROYED("put_zcopy", uct_ep_put_zcopy(dead, &iov, 1, raddr, rkey, &cp.uc));
    EXPECT_DESTROYED("am_short", uct_ep_am_short(dead, AM_SHORT_ID, 0, src, 8));
    EXPECT_DESTROYED("atomic64_post add",
                     uct_ep_atomic64_post(dead, UCT_ATOMIC_OP_ADD, 1, raddr, rkey));
    EXPECT_DESTROYED("atomic_cswap64",
                     uct_ep_atomic_cswap64(dead, 0, 1, raddr, rkey, &v, &cp.uc));
    EXPECT_DESTROYED("flush", uct_ep_flush(dead, 0, &cp.uc));
    EXPECT_DESTROYED("fence", uct_ep_fence(dead, 0));
    EXPECT_DESTROYED("pending_add", uct_ep_pending_add(dead, &pending.req, 0));
#undef EXPECT_DESTROYED
    n = uct_ep_am_bcopy(dead, AM_SHORT_ID, destroyed_pack_cb, NULL, 0);
    check(c, n == UCS_ERR_INVALID_PARAM, "destroyed ep: am_bcopy", "returned %zd", n);
    uct_ep_pending_purge(dead, destroyed_purge_cb, NULL);
    progress_for(c, 5);
    check(c, destroyed_callbacks == 0 && cp.calls == 0 && pending.runs == 0,
          "destroyed ep: no pack, purge, pending or completion callback ran",
          "%u pack/purge callbacks, %d completions, pending ran %d times", destroyed_callbacks,
          cp.calls, (int)pending.runs);
    am_report_check(c, &none, 300, 0, "destroyed ep: the target received no AM");
    check(c, target_mem_is(c, off, 256, BG_TAG, GUARD, why, sizeof(why)),
          "destroyed ep: target memory untouched", "%s", why);
    destroy_ep2(c);
}
