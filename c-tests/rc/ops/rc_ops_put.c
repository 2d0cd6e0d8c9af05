/*
 * rc_ops group `put`: put short/bcopy/zcopy at several sizes up to the iface
 * limits (multi-entry iovs), checked at the target with the guard bytes
 * around them. Run alone with `rc_ops -g put`.
 */
#include "rc_ops.h"

void test_put(struct ctx *c)
{
    static const size_t short_list[] = { 1, 7, 8, 64 };
    static const size_t bcopy_list[] = { 1, 64, 1000, 4096 };
    static const size_t zcopy_list[] = { 1, 4096, 65536 };
    size_t sizes[16];
    unsigned n, i, iovs;
    char name[96], why[256] = "";

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT)) {
        check(c, 0, "put_short", "the iface does not advertise UCT_IFACE_FLAG_PUT_SHORT");
    } else {
        n = sizes_upto(1, c->attr.cap.put.max_short, short_list, 4, sizes);
        for (i = 0; i < n; i++) {
            uint32_t tag = new_tag(c);
            size_t off   = talloc(c, sizes[i]);
            uint8_t buf[4096];
            ucs_status_t st;
            if (sizes[i] > sizeof(buf)) {
                die(c, "put max_short %zu is larger than the test buffer", sizes[i]);
            }
            fill_pat(tag, buf, sizes[i], 0);
            st = POST(c, uct_ep_put_short(c->ep, buf, (unsigned)sizes[i], c->peer_base + off,
                                          c->peer_rkey.rkey));
            memset(buf, 0, sizeof(buf)); /* the call copied it */
            snprintf(name, sizeof(name), "put_short %zu bytes", sizes[i]);
            if (st != UCS_OK) {
                check(c, 0, name, "returned %s", ucs_status_string(st));
                continue;
            }
            st = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
            if (st != UCS_OK) {
                check(c, 0, name, "flush: %s", ucs_status_string(st));
                continue;
            }
            check(c, target_mem_is(c, off, sizes[i], tag, GUARD, why, sizeof(why)), name, "%s",
                  why);
        }
    }

    n = sizes_upto(1, c->attr.cap.put.max_bcopy, bcopy_list, 4, sizes);
    for (i = 0; i < n; i++) {
        uint32_t tag = new_tag(c);
        size_t off   = talloc(c, sizes[i]);
        uint8_t *buf = malloc(sizes[i]);
        struct pack_arg pa = { buf, sizes[i] };
        double deadline    = oob_now_s() + c->wait_s;
        unsigned idle      = 0;
        ssize_t r;
        ucs_status_t st;
        fill_pat(tag, buf, sizes[i], 0);
        do {
            r = uct_ep_put_bcopy(c->ep, pack_cb, &pa, c->peer_base + off, c->peer_rkey.rkey);
            if (r == UCS_ERR_NO_RESOURCE) {
                progress_idle(c, &idle);
            }
        } while (r == UCS_ERR_NO_RESOURCE && oob_now_s() < deadline);
        memset(buf, 0, sizes[i]);
        free(buf);
        snprintf(name, sizeof(name), "put_bcopy %zu bytes", sizes[i]);
        if (r != (ssize_t)sizes[i]) {
            check(c, 0, name, "returned %zd (want the packed length %zu)", r, sizes[i]);
            continue;
        }
        st = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        if (st != UCS_OK) {
            check(c, 0, name, "flush: %s", ucs_status_string(st));
            continue;
        }
        check(c, target_mem_is(c, off, sizes[i], tag, GUARD, why, sizeof(why)), name, "%s", why);
    }

    n = sizes_upto(1, min_sz(c->attr.cap.put.max_zcopy, MAX_ZCOPY_TESTED), zcopy_list, 3, sizes);
    for (iovs = 1; iovs <= 2; iovs++) {
        unsigned iovcnt = iovs == 1 ? 1 : (unsigned)min_sz(c->attr.cap.put.max_iov, MAX_IOV);
        for (i = 0; i < n; i++) {
            uint32_t tag  = new_tag(c);
            size_t off    = talloc(c, sizes[i]);
            uint8_t *src  = lalloc(c, sizes[i]);
            unsigned cnt  = (unsigned)min_sz(iovcnt, sizes[i]);
            uct_iov_t iov[MAX_IOV];
            struct comp cp;
            ucs_status_t st;
            fill_pat(tag, src, sizes[i], 0);
            make_iov(c, iov, cnt, src, sizes[i]);
            comp_init(&cp);
            st = POST(c, uct_ep_put_zcopy(c->ep, iov, cnt, c->peer_base + off,
                                          c->peer_rkey.rkey, &cp.uc));
            snprintf(name, sizeof(name), "put_zcopy %zu bytes, %u iov", sizes[i], cnt);
            if (st == UCS_INPROGRESS && !wait_calls(c, &cp.calls, 1, c->wait_s)) {
                check(c, 0, name, "the completion never ran");
                continue;
            }
            progress_for(c, 1);
            if (!comp_ok(&cp, st, why, sizeof(why))) {
                check(c, 0, name, "%s", why);
                continue;
            }
            check(c, target_mem_is(c, off, sizes[i], tag, GUARD, why, sizeof(why)), name, "%s",
                  why);
        }
    }
}
