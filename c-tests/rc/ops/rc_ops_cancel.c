/*
 * rc_ops group `cancel`: flush CANCEL on a second ep pair. Run alone with
 * `rc_ops -g cancel`.
 */
#include "rc_ops.h"

/* A second ep pair, cancelled: every outstanding op completes exactly once
 * (UCS_OK or UCS_ERR_CANCELED), pending requests are purged, not run. */
static unsigned purge_calls;

static void purge_cb(uct_pending_req_t *req, void *arg)
{
    struct pend *p = (struct pend *)req;
    (void)arg;
    p->runs += 100; /* marks "purged" distinctly from "ran" */
    purge_calls++;
}

void test_cancel(struct ctx *c)
{
    enum { N = 16384, NPEND = 6, PUT_LEN = 512 };
    struct comp *cps = calloc(N, sizeof(*cps)), fc;
    ucs_status_t st, *posted = calloc(N, sizeof(*posted));
    struct pend ps[NPEND];
    unsigned i, posted_n = 0, calls_bad = 0, status_bad = 0, ok_n = 0, canceled_n = 0;
    unsigned pend_n = 0;
    char why[256] = "";

    st = connect_ep2(c);
    if (st != UCS_OK) {
        check(c, 0, "flush CANCEL", "a second ep pair: %s", ucs_status_string(st));
        free(cps);
        free(posted);
        return;
    }
    /* puts with completions, posted without progress until the send queue
     * is full: many outstanding */
    for (i = 0; i < N; i++) {
        uint8_t *src = lalloc(c, PUT_LEN);
        uct_iov_t iov;
        comp_init(&cps[i]);
        make_iov(c, &iov, 1, src, PUT_LEN);
        posted[i] = uct_ep_put_zcopy(c->ep2, &iov, 1, c->peer_base + talloc(c, PUT_LEN),
                                     c->peer_rkey.rkey, &cps[i].uc);
        if (posted[i] == UCS_ERR_NO_RESOURCE) {
            break;
        }
        posted_n++;
    }
    /* then pending requests (never to run: purged before the cancel) */
    for (i = 0; i < NPEND && posted_n < N; i++) {
        memset(&ps[i], 0, sizeof(ps[i]));
        ps[i].req.func = pend_cb;
        ps[i].c        = c;
        ps[i].is_am    = 0;
        ps[i].put_off  = talloc(c, 24);
        if (uct_ep_pending_add(c->ep2, &ps[i].req, 0) == UCS_OK) {
            pend_n++;
        }
    }
    purge_calls = 0;
    uct_ep_pending_purge(c->ep2, purge_cb, NULL);
    {
        int ok = pend_n > 0 && purge_calls == pend_n;
        for (i = 0; i < pend_n; i++) {
            ok &= ps[i].runs == 100;
        }
        check(c, ok, "pending purge: every queued request purged once, none ran",
              "%u queued, %u purge callbacks", pend_n, purge_calls);
    }
    comp_init(&fc);
    /* NO_RESOURCE: the flush itself needs send resources; progress, retry */
    st = POST(c, uct_ep_flush(c->ep2, UCT_FLUSH_FLAG_CANCEL, &fc.uc));
    if (st == UCS_INPROGRESS) {
        wait_calls(c, &fc.calls, 1, c->wait_s);
    }
    for (i = 0; i < posted_n; i++) {
        if (posted[i] == UCS_INPROGRESS) {
            wait_calls(c, &cps[i].calls, 1, c->wait_s);
        }
    }
    progress_for(c, 20);
    for (i = 0; i < posted_n; i++) {
        int want = posted[i] == UCS_INPROGRESS;
        if (cps[i].calls != want) {
            calls_bad++;
        } else if (want && cps[i].status == UCS_OK) {
            ok_n++;
        } else if (want && cps[i].status == UCS_ERR_CANCELED) {
            canceled_n++;
        } else if (want) {
            if (status_bad++ == 0) {
                snprintf(why, sizeof(why), "op %u completed with %s", i,
                         ucs_status_string(cps[i].status));
            }
        }
    }
    check(c, (st == UCS_OK && fc.calls == 0) || (st == UCS_INPROGRESS && fc.calls == 1),
          "flush CANCEL: the flush completes once", "returned %s, completion called %d times",
          ucs_status_string(st), fc.calls);
    check(c, calls_bad == 0 && status_bad == 0,
          "flush CANCEL: every outstanding op completes once, OK or CANCELED",
          "%u ops outstanding: %u OK, %u CANCELED, %u called wrongly, %u other statuses %s",
          posted_n, ok_n, canceled_n, calls_bad, status_bad, why);
    {
        uint64_t v = 1;
        st = uct_ep_put_short(c->ep2, &v, 8, c->peer_base + talloc(c, 8), c->peer_rkey.rkey);
        check(c, st != UCS_OK && st != UCS_INPROGRESS,
              "flush CANCEL: a post on the cancelled ep fails", "returned %s",
              ucs_status_string(st));
    }
    destroy_ep2(c);
    free(cps);
    free(posted);
}
