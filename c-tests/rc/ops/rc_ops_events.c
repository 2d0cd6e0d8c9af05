/*
 * rc_ops group `events`: blocking waits on the event fd. Run alone with
 * `rc_ops -g events`.
 */
#include "rc_ops.h"

void test_events(struct ctx *c)
{
    enum { N = 5 };
    struct cmd_args args = { N, 0, 0, 0 }, out;
    struct am_plan plan  = { 0 };
    unsigned i;
    size_t len;
    void *reply;
    uint32_t type;
    int fd = -1;
    ucs_status_t st;

    if ((c->attr.cap.event_flags & (UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                    UCT_IFACE_FLAG_EVENT_FD)) !=
        (UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_FD)) {
        check(c, 0, "events", "the iface does not advertise EVENT_FD, EVENT_RECV and "
                              "EVENT_SEND_COMP (event_flags 0x%" PRIx64 ")",
              (uint64_t)c->attr.cap.event_flags);
        return;
    }

    /* target blocks in poll() on its event fd; we send N AMs, 30 ms apart */
    msg_send(c, CMD_EVENT_RECV, &args, sizeof(args));
    reply = msg_recv(c, &type, &len); /* "armed" */
    memcpy(&out, reply, sizeof(out));
    free(reply);
    if (out.a != 0) {
        check(c, 0, "event fd: receive", "target could not arm: %s",
              ucs_status_string((ucs_status_t)(int64_t)out.a));
    }
    usleep(50000);
    for (i = 0; i < N; i++) {
        uint8_t msg[48];
        uint32_t tag = new_tag(c);
        make_msg(tag, msg, sizeof(msg));
        st = post_am_short(c, c->ep, AM_SHORT_ID, msg, sizeof(msg));
        if (st == UCS_OK) {
            plan_add(&plan, AM_SHORT_ID, tag, sizeof(msg), "event");
        }
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        usleep(30000);
    }
    reply = msg_recv(c, &type, &len);
    memcpy(&out, reply, sizeof(out));
    free(reply);
    /* out: a = AMs received, b = wakeups, c = wakeups with nothing new,
     * d = early wakeups before the first AM was sent (50 ms of quiet) */
    check(c, out.a == N && out.b >= 1 && out.b <= 3 * N + 3 && out.c <= N + 2,
          "event fd: the target sleeps in poll() and wakes for each AM (no busy progress)",
          "%" PRIu64 " of %d AMs, %" PRIu64 " wakeups, %" PRIu64 " without news", out.a, N,
          out.b, out.c);
    am_report_check(c, &plan, 0, 0, "event fd: AMs received through blocking waits");
    free(plan.e);

    /* our side: wait for a send completion in poll() */
    st = uct_iface_event_fd_get(c->iface, &fd);
    if (st != UCS_OK) {
        check(c, 0, "event fd: send completion", "uct_iface_event_fd_get: %s",
              ucs_status_string(st));
        return;
    }
    {
        /* A put big enough to take a while; if it still completes before
         * the arm sticks (BUSY while other completions drain), try again:
         * what must happen at least once is arm, sleep in poll(), wake. */
        enum { ATTEMPTS = 8 };
        size_t plen = 4u << 20;
        int polls = 0, armed = 0, timeouts = 0, slept = 0, attempt, bad = 0;
        char why[256] = "";
        for (attempt = 0; attempt < ATTEMPTS && !slept && !bad; attempt++) {
            uint8_t *src    = lalloc(c, plen);
            uint32_t tag    = new_tag(c);
            size_t off      = talloc(c, plen);
            double deadline = oob_now_s() + c->wait_s;
            int armed_now = 0, woke_now = 0;
            uct_iov_t iov;
            struct comp cp;
            comp_init(&cp);
            fill_pat(tag, src, plen, 0);
            make_iov(c, &iov, 1, src, plen);
            progress_for(c, 10); /* nothing left over in the CQs */
            st = POST(c, uct_ep_put_zcopy(c->ep, &iov, 1, c->peer_base + off,
                                          c->peer_rkey.rkey, &cp.uc));
            while (st == UCS_INPROGRESS && cp.calls == 0 && oob_now_s() < deadline) {
                ucs_status_t ast = uct_iface_event_arm(c->iface, UCT_EVENT_SEND_COMP);
                if (ast == UCS_ERR_BUSY) {
                    progress(c);
                    continue;
                }
                if (ast != UCS_OK) {
                    snprintf(why, sizeof(why), "uct_iface_event_arm: %s",
                             ucs_status_string(ast));
                    bad = 1;
                    break;
                }
                armed++;
                armed_now = 1;
                {
                    struct pollfd pfd = { .fd = fd, .events = POLLIN };
                    int rc            = poll(&pfd, 1, 10000);
                    polls++;
                    if (rc == 0) {
                        timeouts++;
                        bad = 1;
                    } else if (rc > 0) {
                        woke_now = 1;
                    }
                }
                while (progress(c) != 0) {
                }
            }
            if (st == UCS_INPROGRESS && cp.calls == 0) {
                wait_calls(c, &cp.calls, 1, c->wait_s);
            }
            progress_for(c, 1);
            if (!comp_ok(&cp, st, why, sizeof(why)) ||
                !target_mem_is(c, off, plen, tag, GUARD, why, sizeof(why))) {
                bad = 1;
            }
            slept = armed_now && woke_now && cp.calls == 1;
        }
        check(c, slept && !bad,
              "event fd: the initiator sleeps in poll() until its put's completion",
              "%d attempts: armed %d times, %d polls, %d timed out (10 s) %s", attempt, armed,
              polls, timeouts, why);
    }

    /* our side again, receives: the target sends an AM 100 ms after the arm */
    {
        struct cmd_args delay = { 100, 0, 0, 0 };
        unsigned before = c->log_count, wakeups = 0;
        double t0, waited = 0;
        int armed = 0;
        st = UCS_ERR_BUSY;
        while (st == UCS_ERR_BUSY) {
            while (progress(c) != 0) {
            }
            st = uct_iface_event_arm(c->iface, UCT_EVENT_RECV);
        }
        armed = st == UCS_OK;
        msg_send(c, CMD_DELAYED_AM, &delay, sizeof(delay));
        t0 = oob_now_s();
        {
            uint32_t type;
            size_t len;
            free(msg_recv(c, &type, &len)); /* the target's "will send" */
        }
        while (armed && c->log_count == before && oob_now_s() - t0 < 10) {
            struct pollfd pfd = { .fd = fd, .events = POLLIN };
            if (poll(&pfd, 1, 10000) <= 0) {
                break;
            }
            wakeups++;
            do {
                while (progress(c) != 0) {
                }
                st = uct_iface_event_arm(c->iface, UCT_EVENT_RECV);
            } while (st == UCS_ERR_BUSY);
            if (c->log_count != before) {
                waited = oob_now_s() - t0;
            }
        }
        {
            uint32_t type;
            size_t len;
            free(msg_recv(c, &type, &len)); /* the target's "sent" */
            if (type != CMD_DELAYED_AM) {
                die(c, "reply of type %u to the delayed AM command", type);
            }
        }
        /* a poll() that did not sleep would spin here: many wake-ups */
        check(c, armed && c->log_count == before + 1 && wakeups <= 3,
              "event fd: the initiator sleeps in poll() until an AM arrives (sent 100 ms later)",
              "armed %d, %u AMs, received after %.0f ms, %u wake-ups", armed,
              c->log_count - before, waited * 1000, wakeups);
        c->log_count = before;
    }
}
