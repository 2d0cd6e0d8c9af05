/*
 * rc_ops group `fence`: put, fence, get of the same bytes: the get sees the
 * put. Run alone with `rc_ops -g fence`.
 */
#include "rc_ops.h"

void test_fence(struct ctx *c)
{
    enum { ROUNDS = 20 };
    unsigned i, bad = 0;
    char why[256] = "";
    ucs_status_t st, pst;

    /* put, fence, get of the same bytes: the get sees the put */
    for (i = 0; i < ROUNDS; i++) {
        size_t len   = (size_t[]){ 64, 4096, 20000, 100000 }[i % 4];
        uint32_t tag = new_tag(c);
        size_t off   = talloc(c, len);
        uint8_t *src = lalloc(c, len), *dst = lalloc(c, len);
        uct_iov_t siov, diov;
        struct comp pc, gc;
        comp_init(&pc);
        comp_init(&gc);
        fill_pat(tag, src, len, 0);
        guard_local(dst, len);
        make_iov(c, &siov, 1, src, len);
        make_iov(c, &diov, 1, dst, len);
        pst = POST(c, uct_ep_put_zcopy(c->ep, &siov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                       &pc.uc));
        if (i % 2 == 0) {
            uct_ep_fence(c->ep, 0);
        } else {
            uct_iface_fence(c->iface, 0);
        }
        st = POST(c, uct_ep_get_zcopy(c->ep, &diov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                      &gc.uc));
        if (st == UCS_INPROGRESS) {
            wait_calls(c, &gc.calls, 1, c->wait_s);
        }
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        progress_for(c, 1);
        if (!comp_ok(&pc, pst, why, sizeof(why)) || !comp_ok(&gc, st, why, sizeof(why)) ||
            !got_ok(dst, len, tag, 0, why, sizeof(why))) {
            if (bad++ == 0) {
                fprintf(stderr, "  fence round %u (%zu bytes): %s\n", i, len, why);
            }
        }
    }
    check(c, bad == 0, "fence: put, fence (ep and iface), get: the get sees the put",
          "%u of %u rounds wrong", bad, ROUNDS);

    /* put, fence, fetch-add on the same word: the atomic sees the put */
    bad = 0;
    for (i = 0; i < ROUNDS; i++) {
        size_t off     = talloc(c, 8);
        uint64_t v     = oob_mix64(i + 99), *res = (uint64_t *)lalloc(c, 8);
        struct comp fc;
        comp_init(&fc);
        *res = 0;
        st   = POST(c, uct_ep_put_short(c->ep, &v, 8, c->peer_base + off, c->peer_rkey.rkey));
        uct_ep_fence(c->ep, 0);
        st = POST(c, uct_ep_atomic64_fetch(c->ep, UCT_ATOMIC_OP_ADD, 1, res, c->peer_base + off,
                                           c->peer_rkey.rkey, &fc.uc));
        if (st == UCS_INPROGRESS) {
            wait_calls(c, &fc.calls, 1, c->wait_s);
        }
        progress_for(c, 1);
        if (!comp_ok(&fc, st, why, sizeof(why)) || *res != v) {
            if (bad++ == 0) {
                fprintf(stderr, "  fence+atomic round %u: fetched 0x%" PRIx64 ", put 0x%" PRIx64
                                " %s\n", i, *res, v, why);
            }
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    check(c, bad == 0, "fence: put_short, fence, fetch-add: the atomic sees the put",
          "%u of %u rounds wrong", bad, ROUNDS);
}
