/*
 * rc_ops group `bad_input`: bad arguments are refused with a status and
 * change nothing. Run alone with `rc_ops -g bad_input`.
 */
#include "rc_ops.h"

void test_bad_input(struct ctx *c)
{
    uint8_t *buf  = lalloc(c, 1 << 16);
    size_t off    = talloc(c, 1 << 16);
    uint64_t rkey = c->peer_rkey.rkey, raddr = c->peer_base + off;
    const uct_iface_attr_t *a = &c->attr;
    struct am_plan none = { 0 };
    ucs_status_t st;
    uct_iov_t iov[MAX_IOV + 8];
    struct comp cp;
    char why[256] = "";

    memset(buf, 0x3c, 1 << 16);
    comp_init(&cp);
#define EXPECT_INVALID(label, expr) \
    do { \
        st = (expr); \
        check(c, st == UCS_ERR_INVALID_PARAM, "bad input: " label, "returned %s (want %s)", \
              ucs_status_string(st), ucs_status_string(UCS_ERR_INVALID_PARAM)); \
    } while (0)

    EXPECT_INVALID("am_short over max_short",
                   uct_ep_am_short(c->ep, AM_SHORT_ID, 0, buf,
                                   (unsigned)(a->cap.am.max_short - 8 + 1)));
    EXPECT_INVALID("am_short with AM id UCT_AM_ID_MAX",
                   uct_ep_am_short(c->ep, UCT_AM_ID_MAX, 0, buf, 8));
    EXPECT_INVALID("am_short with AM id 255", uct_ep_am_short(c->ep, 255, 0, buf, 8));
    EXPECT_INVALID("am_short NULL payload, length 16",
                   uct_ep_am_short(c->ep, AM_SHORT_ID, 0, NULL, 16));
    {
        struct pack_arg pa = { buf, 16 };
        ssize_t n          = uct_ep_am_bcopy(c->ep, UCT_AM_ID_MAX, pack_cb, &pa, 0);
        check(c, n == UCS_ERR_INVALID_PARAM, "bad input: am_bcopy with AM id UCT_AM_ID_MAX",
              "returned %zd", n);
    }
    make_iov(c, iov, 1, buf, a->cap.am.max_short + 1);
    iov[0].memh = UCT_MEM_HANDLE_NULL;
    EXPECT_INVALID("am_short_iov over max_short", uct_ep_am_short_iov(c->ep, AM_IOV_ID, iov, 1));
    iov[0].buffer = NULL;
    iov[0].length = 16;
    EXPECT_INVALID("am_short_iov NULL buffer, length 16",
                   uct_ep_am_short_iov(c->ep, AM_IOV_ID, iov, 1));
    EXPECT_INVALID("am_zcopy header over max_hdr",
                   uct_ep_am_zcopy(c->ep, AM_ZCOPY_ID, buf, (unsigned)(a->cap.am.max_hdr + 1),
                                   NULL, 0, 0, &cp.uc));
    make_iov(c, iov, 1, buf, min_sz(a->cap.am.max_zcopy, 1 << 16));
    if (a->cap.am.max_zcopy < (1 << 16)) {
        EXPECT_INVALID("am_zcopy header + payload over max_zcopy",
                       uct_ep_am_zcopy(c->ep, AM_ZCOPY_ID, buf, 8, iov, 1, 0, &cp.uc));
    }
    EXPECT_INVALID("am_zcopy with AM id UCT_AM_ID_MAX",
                   uct_ep_am_zcopy(c->ep, UCT_AM_ID_MAX, buf, 8, iov, 1, 0, &cp.uc));
    make_iov(c, iov, (unsigned)min_sz(a->cap.am.max_iov + 1, MAX_IOV + 8), buf, 4096);
    EXPECT_INVALID("am_zcopy more iov entries than max_iov",
                   uct_ep_am_zcopy(c->ep, AM_ZCOPY_ID, buf, 8, iov,
                                   min_sz(a->cap.am.max_iov + 1, MAX_IOV + 8), 0, &cp.uc));
    EXPECT_INVALID("am_zcopy NULL header, length 8",
                   uct_ep_am_zcopy(c->ep, AM_ZCOPY_ID, NULL, 8, NULL, 0, 0, &cp.uc));
    EXPECT_INVALID("put_short over max_short",
                   uct_ep_put_short(c->ep, buf, (unsigned)(a->cap.put.max_short + 1), raddr, rkey));
    EXPECT_INVALID("put_short NULL buffer, length 8",
                   uct_ep_put_short(c->ep, NULL, 8, raddr, rkey));
    EXPECT_INVALID("get_bcopy over max_bcopy",
                   uct_ep_get_bcopy(c->ep, unpack_cb, &(struct unpack_arg){ buf, 1 << 16, 0 },
                                    a->cap.get.max_bcopy + 1, raddr, rkey, &cp.uc));
    if (a->cap.flags & UCT_IFACE_FLAG_GET_SHORT) {
        EXPECT_INVALID("get_short over max_short",
                       uct_ep_get_short(c->ep, buf, (unsigned)(a->cap.get.max_short + 1), raddr,
                                        rkey));
        EXPECT_INVALID("get_short NULL buffer, length 8",
                       uct_ep_get_short(c->ep, NULL, 8, raddr, rkey));
    }
    if (a->cap.put.max_zcopy < (1u << 30) + 1 && a->cap.put.max_zcopy < SIZE_MAX) {
        /* a length over max_zcopy, described without touching that much memory */
        iov[0].buffer = buf;
        iov[0].length = a->cap.put.max_zcopy + 1;
        iov[0].memh   = c->memh;
        iov[0].stride = 0;
        iov[0].count  = 1;
        EXPECT_INVALID("put_zcopy over max_zcopy",
                       uct_ep_put_zcopy(c->ep, iov, 1, raddr, rkey, &cp.uc));
    }
    make_iov(c, iov, (unsigned)min_sz(a->cap.put.max_iov + 1, MAX_IOV + 8), buf, 4096);
    if (a->cap.put.max_iov + 1 <= MAX_IOV + 8) {
        EXPECT_INVALID("put_zcopy more iov entries than max_iov",
                       uct_ep_put_zcopy(c->ep, iov, a->cap.put.max_iov + 1, raddr, rkey, &cp.uc));
    }
    iov[0].buffer = NULL;
    iov[0].length = 64;
    EXPECT_INVALID("get_zcopy NULL buffer, length 64",
                   uct_ep_get_zcopy(c->ep, iov, 1, raddr, rkey, &cp.uc));
#undef EXPECT_INVALID

    /* nothing of the above was posted: no completion, no AM, no write */
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    progress_for(c, 5);
    check(c, cp.calls == 0, "bad input: no completion of a rejected op ran", "%d calls",
          cp.calls);
    am_report_check(c, &none, 300, 0, "bad input: the target received no AM from rejected posts");
    check(c, target_mem_is(c, off, 1 << 16, BG_TAG, GUARD, why, sizeof(why)),
          "bad input: target memory untouched by rejected puts", "%s", why);
    /* the ep still works */
    {
        struct am_plan p = { 0 };
        post_data_am(c, &p, OP_AM_SHORT, 24, NULL, NULL, "after bad input");
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        am_report_check(c, &p, 0, 0, "bad input: the ep works afterwards");
        free(p.e);
    }
}
