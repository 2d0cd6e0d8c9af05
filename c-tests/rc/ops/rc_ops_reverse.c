/*
 * rc_ops group `reverse`: both directions: AMs and a put from the target to
 * the initiator. Run alone with `rc_ops -g reverse`.
 */
#include "rc_ops.h"

void test_reverse(struct ctx *c)
{
    enum { N = 50 };
    size_t off = 4096; /* initiator region: the target writes 64 bytes here */
    struct cmd_args r;
    unsigned i, bad = 0;
    memset(c->region + off - GUARD, 0, 64 + 2 * GUARD);
    c->log_count = 0;
    r            = rpc_args(c, CMD_REVERSE, N, off, 0, 0);
    /* r.a = the tag base the target used, r.b = its post failures */
    {
        double deadline = oob_now_s() + c->wait_s;
        unsigned idle   = 0;
        while (c->log_count < N && oob_now_s() < deadline) {
            progress_idle(c, &idle);
        }
        progress_for(c, 20);
    }
    for (i = 0; i < N; i++) {
        if (i >= c->log_count || c->log[i].tag != r.a + i || !c->log[i].ok ||
            c->log[i].id != AM_REVERSE_ID) {
            bad++;
        }
    }
    check(c, bad == 0 && c->log_count == N && r.b == 0,
          "reverse: target -> initiator AMs (short and bcopy) arrive once, in order, intact",
          "%u of %d arrived, %u wrong, %" PRIu64 " failed posts", c->log_count, N, bad, r.b);
    bad = find_bad((uint32_t)r.a, c->region + off, 64, 0) >= 0;
    check(c, !bad, "reverse: target -> initiator put_short lands", "%s",
          bad ? "the bytes differ" : "");
    c->log_count = 0;
    lalloc(c, 8192); /* keep the next local buffers off this area */
}
