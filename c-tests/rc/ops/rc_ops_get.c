/*
 * rc_ops group `get`: get short/bcopy/zcopy at several sizes up to the iface
 * limits: the data and the local guard bytes (get_short's as soon as it
 * returns). Run alone with `rc_ops -g get`.
 */
#include "rc_ops.h"

void test_get(struct ctx *c)
{
    static const size_t short_list[] = { 1, 8, 64 };
    static const size_t bcopy_list[] = { 1, 100, 4096 };
    static const size_t zcopy_list[] = { 1, 4096, 65536 };
    size_t sizes[16];
    unsigned n, i, iovs;
    char name[96], why[256] = "";
    /* one source area of the target, filled once with a known pattern */
    uint32_t src_tag = new_tag(c);
    size_t src_len   = MAX_ZCOPY_TESTED;
    size_t src_off   = talloc(c, src_len);
    rpc_args(c, CMD_FILL, src_off, src_len, src_tag, 0);

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_GET_SHORT)) {
        check(c, 0, "get_short",
              "the iface does not advertise UCT_IFACE_FLAG_GET_SHORT (cap.get.max_short %zu): "
              "uct_ep_get_short is required and not implemented yet",
              c->attr.cap.get.max_short);
    } else {
        n = sizes_upto(1, min_sz(c->attr.cap.get.max_short, 4096), short_list, 3, sizes);
        for (i = 0; i < n; i++) {
            size_t at    = 3 + 97 * i; /* unaligned remote offsets */
            uint8_t *dst = lalloc(c, sizes[i]);
            ucs_status_t st;
            guard_local(dst, sizes[i]);
            st = POST(c, uct_ep_get_short(c->ep, dst, (unsigned)sizes[i],
                                          c->peer_base + src_off + at, c->peer_rkey.rkey));
            snprintf(name, sizeof(name), "get_short %zu bytes", sizes[i]);
            /* synchronous: UCS_OK with the data in place on return, with
             * no flush or progress after it (what UCX's callers read it as) */
            if (st != UCS_OK) {
                check(c, 0, name, "returned %s, not UCS_OK", ucs_status_string(st));
                continue;
            }
            check(c, got_ok(dst, sizes[i], src_tag, at, why, sizeof(why)), name,
                  "on return: %s", why);
        }
    }

    n = sizes_upto(1, min_sz(c->attr.cap.get.max_bcopy, 1 << 20), bcopy_list, 3, sizes);
    for (i = 0; i < n; i++) {
        size_t at    = 5 + 31 * i;
        uint8_t *dst = lalloc(c, sizes[i]);
        struct unpack_arg ua = { dst, sizes[i], 0 };
        struct comp cp;
        ucs_status_t st;
        guard_local(dst, sizes[i]);
        comp_init(&cp);
        st = POST(c, uct_ep_get_bcopy(c->ep, unpack_cb, &ua, sizes[i], c->peer_base + src_off + at,
                                      c->peer_rkey.rkey, &cp.uc));
        snprintf(name, sizeof(name), "get_bcopy %zu bytes", sizes[i]);
        if (st == UCS_INPROGRESS && !wait_calls(c, &cp.calls, 1, c->wait_s)) {
            check(c, 0, name, "the completion never ran");
            continue;
        }
        progress_for(c, 1);
        if (!comp_ok(&cp, st, why, sizeof(why))) {
            check(c, 0, name, "%s", why);
        } else if (ua.calls != 1 || ua.len != sizes[i]) {
            check(c, 0, name, "unpack callback called %d times, length %s", ua.calls,
                  ua.len == sizes[i] ? "right" : "wrong");
        } else {
            check(c, got_ok(dst, sizes[i], src_tag, at, why, sizeof(why)), name, "%s", why);
        }
    }

    n = sizes_upto(1, min_sz(c->attr.cap.get.max_zcopy, MAX_ZCOPY_TESTED - 64), zcopy_list, 3,
                   sizes);
    for (iovs = 1; iovs <= 2; iovs++) {
        unsigned iovcnt = iovs == 1 ? 1 : (unsigned)min_sz(c->attr.cap.get.max_iov, MAX_IOV);
        for (i = 0; i < n; i++) {
            size_t at    = 11 + 13 * i;
            uint8_t *dst = lalloc(c, sizes[i]);
            unsigned cnt = (unsigned)min_sz(iovcnt, sizes[i]);
            uct_iov_t iov[MAX_IOV];
            struct comp cp;
            ucs_status_t st;
            guard_local(dst, sizes[i]);
            make_iov(c, iov, cnt, dst, sizes[i]);
            comp_init(&cp);
            st = POST(c, uct_ep_get_zcopy(c->ep, iov, cnt, c->peer_base + src_off + at,
                                          c->peer_rkey.rkey, &cp.uc));
            snprintf(name, sizeof(name), "get_zcopy %zu bytes, %u iov", sizes[i], cnt);
            if (st == UCS_INPROGRESS && !wait_calls(c, &cp.calls, 1, c->wait_s)) {
                check(c, 0, name, "the completion never ran");
                continue;
            }
            progress_for(c, 1);
            if (!comp_ok(&cp, st, why, sizeof(why))) {
                check(c, 0, name, "%s", why);
                continue;
            }
            check(c, got_ok(dst, sizes[i], src_tag, at, why, sizeof(why)), name, "%s", why);
        }
    }
    /* the gets left the source untouched */
    check(c, target_mem_is(c, src_off, src_len, src_tag, GUARD, why, sizeof(why)),
          "get leaves the target memory unchanged", "%s", why);
}
