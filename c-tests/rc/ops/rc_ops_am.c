/*
 * rc_ops group `am`: the AM ops (short, short_iov, bcopy, zcopy with header
 * and iovs): content, dispatch by id, order, exactly once. Run alone with
 * `rc_ops -g am`.
 */
#include "rc_ops.h"

void test_am(struct ctx *c)
{
    static const size_t short_list[] = { 8, 9, 16, 64 };
    static const size_t bcopy_list[] = { 8, 100, 1000, 4096 };
    size_t sizes[16];
    unsigned n, i, k;
    char what[96], why[256] = "";
    struct am_plan plan = { 0 };
    struct comp comps[64];
    ucs_status_t posted[64];
    char comp_names[64][128];
    unsigned ncomp = 0;
    ucs_status_t st;

    /* am_short: message = the 8-byte header + payload */
    n = sizes_upto(8, c->attr.cap.am.max_short, short_list, 4, sizes);
    for (i = 0; i < n; i++) {
        snprintf(what, sizeof(what), "am_short header+%zu", sizes[i] - 8);
        st = post_data_am(c, &plan, OP_AM_SHORT, sizes[i], NULL, NULL, what);
        if (st != UCS_OK) {
            check(c, 0, what, "returned %s", ucs_status_string(st));
        }
    }
    /* am_short_iov: 1 entry and the most entries the iface allows */
    n = sizes_upto(8, c->attr.cap.am.max_short, short_list, 4, sizes);
    for (k = 0; k < 2; k++) {
        unsigned cnt = k == 0 ? 1 : (unsigned)min_sz(c->attr.cap.am.max_iov, 8);
        for (i = 0; i < n; i++) {
            struct am_zcopy_shape zs = { 0, (unsigned)min_sz(cnt, sizes[i]) };
            snprintf(what, sizeof(what), "am_short_iov %u iov", zs.iovcnt);
            st = post_data_am(c, &plan, OP_AM_SHORT_IOV, sizes[i], &zs, NULL, what);
            if (st != UCS_OK) {
                check(c, 0, what, "%zu bytes: returned %s", sizes[i], ucs_status_string(st));
            }
        }
    }
    /* am_bcopy */
    n = sizes_upto(8, c->attr.cap.am.max_bcopy, bcopy_list, 4, sizes);
    for (i = 0; i < n; i++) {
        snprintf(what, sizeof(what), "am_bcopy");
        st = post_data_am(c, &plan, OP_AM_BCOPY, sizes[i], NULL, NULL, what);
        if (st != UCS_OK) {
            check(c, 0, what, "%zu bytes: returned %s", sizes[i], ucs_status_string(st));
        }
    }
    /* am_zcopy: header 8 bytes or max_hdr; 0, 1 or max_iov payload entries;
     * a small and the largest payload */
    if (c->attr.cap.am.max_hdr < 8) {
        check(c, 0, "am_zcopy", "max_hdr %zu is below the 8 bytes the test needs",
              c->attr.cap.am.max_hdr);
    } else {
        size_t hdrs[2] = { 8, c->attr.cap.am.max_hdr };
        unsigned iovs[3] = { 0, 1, (unsigned)min_sz(c->attr.cap.am.max_iov, MAX_IOV) };
        unsigned h, v;
        for (h = 0; h < 2; h++) {
            for (v = 0; v < 3; v++) {
                size_t lens[2] = { hdrs[h] + (iovs[v] ? 300 : 0),
                                   min_sz(c->attr.cap.am.max_zcopy, MAX_ZCOPY_TESTED) };
                unsigned l;
                for (l = 0; l < (iovs[v] ? 2u : 1u); l++) {
                    struct am_zcopy_shape zs = { hdrs[h], iovs[v] };
                    if (lens[l] < hdrs[h] + iovs[v]) {
                        continue;
                    }
                    snprintf(what, sizeof(what), "am_zcopy hdr %zu, %u iov", hdrs[h], iovs[v]);
                    comp_init(&comps[ncomp]);
                    st = post_data_am(c, &plan, OP_AM_ZCOPY, lens[l], &zs, &comps[ncomp], what);
                    snprintf(comp_names[ncomp], sizeof(comp_names[ncomp]), "%.80s, %zu bytes", what,
                             lens[l]);
                    posted[ncomp++] = st;
                    if (st != UCS_OK && st != UCS_INPROGRESS) {
                        check(c, 0, what, "%zu bytes: returned %s", lens[l],
                              ucs_status_string(st));
                    }
                }
            }
        }
    }
    st = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    if (st != UCS_OK) {
        check(c, 0, "am flush", "%s", ucs_status_string(st));
    }
    progress_for(c, 1);
    for (i = 0; i < ncomp; i++) {
        if (posted[i] == UCS_OK || posted[i] == UCS_INPROGRESS) {
            char line[160];
            snprintf(line, sizeof(line), "am_zcopy completion (%.128s)", comp_names[i]);
            check(c, comp_ok(&comps[i], posted[i], why, sizeof(why)), line, "%s", why);
        }
    }
    am_report_check(c, &plan, 20, 1, "AM ops");
    free(plan.e);
}
