/*
 * rc_ops group `flush`: flush of an ep and of the iface, LOCAL and REMOTE.
 * Run alone with `rc_ops -g flush`.
 */
#include "rc_ops.h"

void test_flush(struct ctx *c)
{
    enum { N = 16 };
    uint32_t tag[N];
    size_t off[N], len = 9000;
    unsigned i, k;
    char why[256] = "";
    struct comp cp;
    ucs_status_t st;
    static const char *const names[] = {
        "flush: ep flush LOCAL with a completion, then the puts are at the target",
        "flush: ep flush REMOTE, polled: the puts are at the target",
        "flush: iface flush LOCAL, polled: the puts are at the target",
        "flush: iface flush REMOTE, polled: the puts are at the target",
    };

    for (k = 0; k < 4; k++) {
        int ok = 1;
        for (i = 0; i < N; i++) {
            uint8_t *src = lalloc(c, len);
            uct_iov_t iov;
            tag[i] = new_tag(c);
            off[i] = talloc(c, len);
            fill_pat(tag[i], src, len, 0);
            make_iov(c, &iov, 1, src, len);
            /* no completion: only the flush says when they are done */
            st = POST(c, uct_ep_put_zcopy(c->ep, &iov, 1, c->peer_base + off[i],
                                          c->peer_rkey.rkey, NULL));
            if (st != UCS_OK && st != UCS_INPROGRESS) {
                ok = 0;
                snprintf(why, sizeof(why), "put %u: %s", i, ucs_status_string(st));
            }
        }
        if (k == 0) {
            comp_init(&cp);
            st = POST(c, uct_ep_flush(c->ep, UCT_FLUSH_FLAG_LOCAL, &cp.uc));
            if (st == UCS_INPROGRESS) {
                if (!wait_calls(c, &cp.calls, 1, c->wait_s)) {
                    ok = 0;
                    snprintf(why, sizeof(why), "the flush completion never ran");
                }
            }
            progress_for(c, 1);
            if (ok && !comp_ok(&cp, st, why, sizeof(why))) {
                ok = 0;
            }
        } else if (k == 1) {
            st = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_REMOTE);
            if (st != UCS_OK) {
                ok = 0;
                snprintf(why, sizeof(why), "flush REMOTE: %s", ucs_status_string(st));
            }
        } else {
            double deadline = oob_now_s() + c->wait_s;
            unsigned idle   = 0;
            unsigned flags  = k == 2 ? UCT_FLUSH_FLAG_LOCAL : UCT_FLUSH_FLAG_REMOTE;
            while ((st = uct_iface_flush(c->iface, flags, NULL)) == UCS_INPROGRESS ||
                   st == UCS_ERR_NO_RESOURCE) {
                if (oob_now_s() > deadline) {
                    break;
                }
                progress_idle(c, &idle);
            }
            if (st != UCS_OK) {
                ok = 0;
                snprintf(why, sizeof(why), "iface flush: %s", ucs_status_string(st));
            }
        }
        /* checked right away: no extra wait after the flush */
        for (i = 0; i < N && ok; i++) {
            ok = target_mem_is(c, off[i], len, tag[i], GUARD, why, sizeof(why));
        }
        check(c, ok, names[k], "%s", why);
    }

    /* flush of an idle ep: done at once */
    st = uct_ep_flush(c->ep, UCT_FLUSH_FLAG_LOCAL, NULL);
    check(c, st == UCS_OK, "flush: an idle ep flushes with UCS_OK at once", "returned %s",
          ucs_status_string(st));
    comp_init(&cp);
    st = uct_ep_flush(c->ep, UCT_FLUSH_FLAG_LOCAL, &cp.uc);
    progress_for(c, 5);
    check(c, (st == UCS_OK && cp.calls == 0) || (st == UCS_INPROGRESS && cp.calls == 1),
          "flush: the completion of an idle ep's flush runs only after UCS_INPROGRESS",
          "returned %s, completion called %d times", ucs_status_string(st), cp.calls);
}
