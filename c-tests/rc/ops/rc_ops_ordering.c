/*
 * rc_ops group `ordering`: a mixed AM stream arrives in order; a put then an
 * AM whose handler checks the put. Run alone with `rc_ops -g ordering`.
 */
#include "rc_ops.h"

void test_ordering(struct ctx *c)
{
    enum { N = 600, ROUNDS = 24 };
    struct am_plan plan = { 0 };
    struct comp *cps    = calloc(N, sizeof(*cps));
    ucs_status_t st, *posted = calloc(N, sizeof(*posted));
    struct comp put_comps[ROUNDS];
    ucs_status_t put_posted[ROUNDS];
    unsigned i, failed_posts = 0, comp_bad = 0;
    char why[256] = "";
    size_t max_bc = min_sz(c->attr.cap.am.max_bcopy, 2048);
    size_t max_sh = c->attr.cap.am.max_short;

    /* a mixed stream: short, bcopy, zcopy, iov in a seeded order */
    for (i = 0; i < N; i++) {
        uint64_t r = oob_mix64(i + 1000);
        enum am_op op = (enum am_op)(r % 4);
        size_t len;
        struct am_zcopy_shape zs = { 8, 1 + (unsigned)((r >> 8) % 2) };
        comp_init(&cps[i]);
        switch (op) {
        case OP_AM_SHORT:
        case OP_AM_SHORT_IOV:
            len = 8 + (r >> 16) % (max_sh - 7);
            zs.hdr_len = 0;
            zs.iovcnt  = (unsigned)min_sz(zs.iovcnt, len);
            break;
        case OP_AM_BCOPY:
            len = 8 + (r >> 16) % (max_bc - 7);
            break;
        default:
            len = 8 + 2 + (r >> 16) % 3000;
            len = min_sz(len, c->attr.cap.am.max_zcopy);
            break;
        }
        st = post_data_am(c, &plan, op, len, &zs, &cps[i], "ordered stream");
        posted[i] = st;
        if (st != UCS_OK && st != UCS_INPROGRESS) {
            failed_posts++;
        }
    }
    st = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    progress_for(c, 2);
    for (i = 0; i < N; i++) {
        if ((posted[i] == UCS_OK || posted[i] == UCS_INPROGRESS) &&
            !comp_ok(&cps[i], posted[i], why, sizeof(why)) && comp_bad++ == 0) {
            fprintf(stderr, "  ordering: AM #%u: %s\n", i, why);
        }
    }
    check(c, comp_bad == 0, "ordering: every am_zcopy completion of the stream ran once",
          "%u wrong", comp_bad);
    if (failed_posts || st != UCS_OK) {
        check(c, 0, "ordering: mixed AM stream posted", "%u posts failed, flush %s", failed_posts,
              ucs_status_string(st));
    }
    am_report_check(c, &plan, 20, 0, "ordering: 600 mixed AMs (short/iov/bcopy/zcopy)");
    free(plan.e);
    free(cps);
    free(posted);

    /* a put then an AM with no flush between: the handler sees the data */
    plan.e = NULL;
    plan.n = plan.cap = 0;
    for (i = 0; i < ROUNDS; i++) {
        uint32_t tag  = new_tag(c), am_tag = new_tag(c);
        size_t len    = (size_t[]){ 8, 300, 5000, 70000 }[i % 4];
        size_t off    = talloc(c, len);
        uint8_t *src  = lalloc(c, len);
        uint64_t desc[4];
        uint8_t msg[40];
        struct comp *cp = &put_comps[i];
        comp_init(cp);
        put_posted[i] = UCS_ERR_NO_MESSAGE; /* not posted */
        fill_pat(tag, src, len, 0);
        if (i % 3 == 0 && len <= c->attr.cap.put.max_short) {
            st = POST(c, uct_ep_put_short(c->ep, src, (unsigned)len, c->peer_base + off,
                                          c->peer_rkey.rkey));
        } else if (i % 3 == 1 && len <= c->attr.cap.put.max_bcopy) {
            struct pack_arg pa = { src, len };
            ssize_t n;
            while ((n = uct_ep_put_bcopy(c->ep, pack_cb, &pa, c->peer_base + off,
                                         c->peer_rkey.rkey)) == UCS_ERR_NO_RESOURCE) {
                progress(c);
            }
            st = n == (ssize_t)len ? UCS_OK : UCS_ERR_IO_ERROR;
        } else {
            uct_iov_t iov;
            make_iov(c, &iov, 1, src, len);
            st = POST(c, uct_ep_put_zcopy(c->ep, &iov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                          &cp->uc));
        }
        if (st != UCS_OK && st != UCS_INPROGRESS) {
            check(c, 0, "ordering: put then AM", "put returned %s", ucs_status_string(st));
            continue;
        }
        put_posted[i] = st;
        /* AM message: [tag][40][off][len][put tag] */
        make_msg(am_tag, msg, sizeof(msg));
        desc[0] = off;
        desc[1] = len;
        desc[2] = tag;
        desc[3] = 0;
        memcpy(msg + 8, desc, 32);
        st = post_am_bcopy(c, c->ep, AM_PUTCHK_ID, msg, sizeof(msg)) == (ssize_t)sizeof(msg)
                     ? UCS_OK
                     : UCS_ERR_IO_ERROR;
        if (st == UCS_OK) {
            plan_add(&plan, AM_PUTCHK_ID, am_tag, sizeof(msg), "put then AM");
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    progress_for(c, 2);
    comp_bad = 0;
    for (i = 0; i < ROUNDS; i++) {
        if (put_posted[i] != UCS_ERR_NO_MESSAGE &&
            !comp_ok(&put_comps[i], put_posted[i], why, sizeof(why)) && comp_bad++ == 0) {
            fprintf(stderr, "  ordering: put %u: %s\n", i, why);
        }
    }
    check(c, comp_bad == 0, "ordering: every put completion ran once", "%u wrong", comp_bad);
    am_report_check(c, &plan, 20, 0,
                    "ordering: put (short/bcopy/zcopy) then AM: the AM handler sees the put");
    free(plan.e);
}
