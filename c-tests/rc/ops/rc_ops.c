/*
 * rc_ops: every rc_mlx5 data-path operation between two processes, checked
 * at the target, with every completion counted.
 *
 * The program forks before any UCT call into an initiator and a target. A
 * socketpair between them carries the out-of-band part: addresses and rkeys
 * at start, then small request/reply commands with which the initiator asks
 * the target what it saw (its memory, the AMs its handlers logged, retained
 * descriptors, blocking waits). Everything the test checks travels over UCT.
 *
 * Payloads are a deterministic byte pattern of (tag, index), so both sides
 * know what any buffer must hold. An AM message is [u32 tag][u32 length]
 * followed by the pattern of `tag` from byte 8 on, whatever op carried it;
 * the target's handler checks it and logs (id, tag, length, ok), and the
 * initiator compares the log with what it posted: content, order, exactly
 * once. The target's memory starts filled with a background pattern, so a
 * put is checked together with the guard bytes around it.
 *
 * Groups, in order: both directions, put/get short/bcopy/zcopy at several
 * sizes up to the iface limits (multi-entry iovs), the AM ops (am_zcopy with
 * header and iovs), atomics 32/64 (post, fetch, swap, cswap hit and miss,
 * many in flight), ordering (a mixed AM stream; a put then an AM whose
 * handler checks the put), pending (a full ring, uct_ep_pending_add),
 * flush (ep/iface, LOCAL/REMOTE), fence, AM descriptor retention, blocking
 * waits on the event fd, flow control (AM floods far past the window),
 * zero-length ops, bad input, a remote access error, flush CANCEL and ops
 * on a destroyed ep (all three on a second ep pair).
 *
 * This file is the harness (the two sides, the target's command loop, the
 * helpers of rc_ops.h); each group is one function in rc_ops_<group>.c.
 * `-g GROUP` runs only the groups named (`-l` lists them): each group is
 * also its own CTest. A group depends on no other group having run.
 *
 * Unless the environment sets them, UCX_RC_FC_WND_SIZE=8 and
 * UCX_RC_RX_QUEUE_LEN=256, so the floods go far past the window and the
 * retention test cycles every receive buffer several times.
 *
 * Only the public UCT API is used, so the same binary runs on the soft HCA
 * and on rdma-core; packet loss comes only from the environment
 * (UCX_SOFT_HCA_LOSS). One line per check, a summary, exit 0 only if every
 * check passed; an alarm fails the run if anything hangs.
 */
#include "rc_ops.h"

/* The peer's device address (a second ep pair connects to it too). */
static uint8_t peer_dev_addr[MAX_ADDR];
/* ------------------------------------------------------------------ util */

static void on_alarm(int sig)
{
    static const char msg[] = "rc_ops: FAIL watchdog: the run did not finish in time "
                              "(a peer hung or an operation never completed)\n";
    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(124);
}

void die(struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rc_ops [%s]: FATAL: ", c ? c->name : "main");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    exit(1);
}

/* Byte j of the pattern of `tag`. */
static uint8_t pat(uint32_t tag, size_t j)
{
    return (uint8_t)(oob_mix64(((uint64_t)tag << 32) ^ (j / 8)) >> (8 * (j % 8)));
}

void fill_pat(uint32_t tag, uint8_t *dst, size_t len, size_t first)
{
    size_t j;
    for (j = 0; j < len; j++) {
        dst[j] = pat(tag, first + j);
    }
}

/* Index of the first byte that differs from the pattern, or -1. */
long find_bad(uint32_t tag, const uint8_t *src, size_t len, size_t first)
{
    size_t j;
    for (j = 0; j < len; j++) {
        if (src[j] != pat(tag, first + j)) {
            return (long)j;
        }
    }
    return -1;
}

/* An AM message: [tag][length] then the pattern of tag. */
void make_msg(uint32_t tag, uint8_t *dst, size_t len)
{
    uint32_t hdr[2] = { tag, (uint32_t)len };
    memcpy(dst, hdr, len < 8 ? len : 8);
    if (len > 8) {
        fill_pat(tag, dst + 8, len - 8, 8);
    }
}

static int check_msg(const uint8_t *data, size_t len, uint32_t *tag)
{
    uint32_t hdr[2];
    if (len < 8) {
        *tag = UINT32_MAX;
        return 0;
    }
    memcpy(hdr, data, 8);
    *tag = hdr[0];
    return hdr[1] == len && find_bad(hdr[0], data + 8, len - 8, 8) < 0;
}

/* ------------------------------------------------------------ the socket */

/* The socket's failures end the run: the peer is gone or out of step. */
static void sock_failed(struct ctx *c, const char *what, int rc)
{
    die(c, "socket %s: %s", what,
        rc == -EPIPE ? "the peer closed the socket (it exited)" : strerror(-rc));
}

void msg_send(struct ctx *c, uint32_t type, const void *data, size_t len)
{
    int rc = oob_msg_send(c->sock, type, data, len);
    if (rc != 0) {
        sock_failed(c, "send", rc);
    }
}

/* Receives one message; returns its payload (malloc'd, NUL-terminated). */
void *msg_recv(struct ctx *c, uint32_t *type, size_t *len)
{
    void *data = NULL;
    int rc     = oob_msg_recv(c->sock, type, &data, len);
    if (rc != 0) {
        sock_failed(c, "recv", rc);
    }
    return data;
}

static int sock_readable(struct ctx *c, int timeout_ms)
{
    return oob_wait_readable(c->sock, timeout_ms) > 0;
}

/* --------------------------------------------------------------- progress */

unsigned progress(struct ctx *c)
{
    return uct_worker_progress(c->worker);
}

/* Progress with a pause when idle: the machine may be small and shared. */
void progress_idle(struct ctx *c, unsigned *idle)
{
    if (progress(c) != 0) {
        *idle = 0;
    } else if (++*idle > 64) {
        sched_yield();
    }
}

/* Progresses until *calls reaches `want` or the deadline. */
int wait_calls(struct ctx *c, const int *calls, int want, double seconds)
{
    double deadline = oob_now_s() + seconds;
    unsigned idle   = 0;
    while (*calls < want) {
        if (oob_now_s() > deadline) {
            return 0;
        }
        progress_idle(c, &idle);
    }
    return 1;
}

/* Progresses for `ms` milliseconds (late or duplicate callbacks show up). */
void progress_for(struct ctx *c, int ms)
{
    double end    = oob_now_s() + ms / 1000.0;
    unsigned idle = 0;
    while (oob_now_s() < end) {
        progress_idle(c, &idle);
    }
}

static void comp_cb(uct_completion_t *self)
{
    struct comp *cp = (struct comp *)self;
    cp->calls++;
    cp->status = self->status;
}

void comp_init(struct comp *cp)
{
    memset(cp, 0, sizeof(*cp));
    cp->uc.func   = comp_cb;
    cp->uc.count  = 1;
    cp->uc.status = UCS_OK;
    cp->status    = UCS_OK;
}

/* ep flush, polled to the end; returns the final status. */
ucs_status_t flush_ep_wait(struct ctx *c, uct_ep_h ep, unsigned flags)
{
    double deadline = oob_now_s() + c->wait_s;
    unsigned idle   = 0;
    ucs_status_t st;
    for (;;) {
        st = uct_ep_flush(ep, flags, NULL);
        if (st != UCS_INPROGRESS && st != UCS_ERR_NO_RESOURCE) {
            return st;
        }
        if (oob_now_s() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
        progress_idle(c, &idle);
    }
}

/* --------------------------------------------------------------- checks */

void check(struct ctx *c, int ok, const char *name, const char *fmt, ...)
{
    va_list ap;
    char detail[512] = "";
    if (fmt != NULL) {
        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
    }
    printf("%s %s%s%s\n", ok ? "[ PASS ]" : "[ FAIL ]", name, detail[0] ? ": " : "", detail);
    fflush(stdout);
    if (ok) {
        c->passed++;
    } else {
        c->failed++;
    }
}

/* The expected completion of an op that returned `posted`: called once with
 * UCS_OK after UCS_INPROGRESS, never after UCS_OK. */
int comp_ok(const struct comp *cp, ucs_status_t posted, char *why, size_t why_len)
{
    int want = posted == UCS_INPROGRESS ? 1 : 0;
    if (posted != UCS_OK && posted != UCS_INPROGRESS) {
        snprintf(why, why_len, "posted with %s", ucs_status_string(posted));
        return 0;
    }
    if (cp->calls != want) {
        snprintf(why, why_len, "completion called %d times after %s (want %d)", cp->calls,
                 ucs_status_string(posted), want);
        return 0;
    }
    if (want && cp->status != UCS_OK) {
        snprintf(why, why_len, "completed with %s", ucs_status_string(cp->status));
        return 0;
    }
    return 1;
}

uint32_t new_tag(struct ctx *c)
{
    return ++c->next_tag;
}

/* --------------------------------------------------- initiator -> target */

void *rpc(struct ctx *c, uint32_t type, const void *arg, size_t len, size_t *reply_len)
{
    uint32_t rtype;
    size_t rlen;
    void *reply;
    unsigned idle = 0;
    msg_send(c, type, arg, len);
    /* keep our side moving while the target works (reverse traffic) */
    while (!sock_readable(c, 0)) {
        progress_idle(c, &idle);
        if (idle > 64) {
            sock_readable(c, 1);
        }
    }
    reply = msg_recv(c, &rtype, &rlen);
    if (rtype != type) {
        die(c, "reply of type %u to command %u", rtype, type);
    }
    if (reply_len != NULL) {
        *reply_len = rlen;
    }
    return reply;
}

struct cmd_args rpc_args(struct ctx *c, uint32_t type, uint64_t a, uint64_t b, uint64_t d3,
                                uint64_t d4)
{
    struct cmd_args args = { a, b, d3, d4 }, out;
    size_t len;
    void *reply = rpc(c, type, &args, sizeof(args), &len);
    memset(&out, 0, sizeof(out));
    memcpy(&out, reply, len < sizeof(out) ? len : sizeof(out));
    free(reply);
    return out;
}

/* Target memory [off, off+len) holds pattern `tag` and `guard` bytes either
 * side hold the background. Returns 1 if so, else writes why. */
int target_mem_is(struct ctx *c, size_t off, size_t len, uint32_t tag, size_t guard,
                         char *why, size_t why_len)
{
    struct cmd_args r = rpc_args(c, CMD_CHECK_MEM, off, len, tag, guard);
    why[0] = '\0';
    if (r.a == 0) {
        return 1;
    }
    snprintf(why, why_len, "%" PRIu64 " bytes differ at the target, first at %" PRId64
             " (relative to the op's first byte)", r.a, (int64_t)r.b);
    return 0;
}

/* A fresh target range with `GUARD` background bytes either side. */
size_t talloc(struct ctx *c, size_t len)
{
    size_t need = (len + 2 * GUARD + 63) & ~(size_t)63, off;
    if (c->talloc_next + need > c->peer_len) {
        rpc_args(c, CMD_FILL, 0, c->peer_len, BG_TAG, 0);
        c->talloc_next = 0;
    }
    off = c->talloc_next + GUARD;
    c->talloc_next += need;
    return off;
}

/* A fresh local (registered) range. */
uint8_t *lalloc(struct ctx *c, size_t len)
{
    size_t need = (len + 2 * GUARD + 63) & ~(size_t)63;
    if (c->lalloc_next + need > c->region_len) {
        c->lalloc_next = 0;
    }
    c->lalloc_next += need;
    return c->region + c->lalloc_next - need + GUARD;
}

/* ------------------------------------------------------ AM expectations */



void plan_add(struct am_plan *p, uint8_t id, uint32_t tag, uint32_t length, const char *what)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->e   = realloc(p->e, p->cap * sizeof(*p->e));
        if (p->e == NULL) {
            die(NULL, "out of memory");
        }
    }
    p->e[p->n].id     = id;
    p->e[p->n].tag    = tag;
    p->e[p->n].length = length;
    snprintf(p->e[p->n].what, sizeof(p->e[p->n].what), "%.*s",
             (int)sizeof(p->e[p->n].what) - 1, what);
    p->n++;
}

/* Asks the target for its AM log once `p->n` AMs arrived (plus `settle_ms`
 * for extras) and compares: same ids, tags, lengths, content ok, in order.
 * With `per_entry`, one check line per expected AM; else one line `name`. */
void am_report_check(struct ctx *c, const struct am_plan *p, int settle_ms, int per_entry,
                            const char *name)
{
    size_t len;
    struct cmd_args args = { p->n, (uint64_t)settle_ms, 0, 0 };
    struct am_log_entry *log = rpc(c, CMD_AM_REPORT, &args, sizeof(args), &len);
    unsigned got = (unsigned)(len / sizeof(*log)), i, bad = 0, first_bad = UINT32_MAX;
    char why[256] = "";

    for (i = 0; i < p->n; i++) {
        const struct am_expect *e = &p->e[i];
        int ok = 0;
        if (i >= got) {
            snprintf(why, sizeof(why), "AM #%u (tag %u) never arrived (%u of %u arrived)", i,
                     e->tag, got, p->n);
        } else if (log[i].tag != e->tag) {
            snprintf(why, sizeof(why), "AM #%u: arrived tag %u, posted tag %u (order or loss)", i,
                     log[i].tag, e->tag);
        } else if (log[i].id != e->id) {
            snprintf(why, sizeof(why), "AM #%u: dispatched to id %u, posted to id %u", i,
                     log[i].id, e->id);
        } else if (log[i].length != e->length) {
            snprintf(why, sizeof(why), "AM #%u: %u bytes, posted %u", i, log[i].length, e->length);
        } else if (!log[i].ok) {
            snprintf(why, sizeof(why), "AM #%u: the data differs at the target", i);
        } else {
            ok = 1;
        }
        if (!ok) {
            bad++;
            if (first_bad == UINT32_MAX) {
                first_bad = i;
            }
        }
        if (per_entry) {
            char line[160];
            snprintf(line, sizeof(line), "%s (%u bytes)", e->what, e->length);
            check(c, ok, line, "%s", ok ? "" : why);
        } else if (!ok && bad <= 3) {
            fprintf(stderr, "  %s: %s\n", name, why);
        }
    }
    if (!per_entry) {
        if (bad == 0 && got == p->n) {
            check(c, 1, name, "%u AMs arrived once each, in posting order, data intact", p->n);
        } else if (bad == 0) {
            check(c, 0, name, "%u AMs expected, %u arrived (%u extra)", p->n, got, got - p->n);
        } else {
            check(c, 0, name, "%u of %u AMs wrong or missing (first #%u; %u arrived)", bad, p->n,
                  first_bad, got);
        }
    } else if (got > p->n) {
        check(c, 0, name, "%u AMs arrived beyond the %u posted", got - p->n, p->n);
    }
    free(log);
}

/* ------------------------------------------------------ posting helpers */



size_t pack_cb(void *dest, void *arg)
{
    const struct pack_arg *p = arg;
    memcpy(dest, p->src, p->len);
    return p->len;
}

ssize_t post_am_bcopy(struct ctx *c, uct_ep_h ep, uint8_t id, const uint8_t *msg, size_t len)
{
    struct pack_arg pa = { msg, len };
    double deadline    = oob_now_s() + c->wait_s;
    unsigned idle      = 0;
    ssize_t n;
    for (;;) {
        n = uct_ep_am_bcopy(ep, id, pack_cb, &pa, 0);
        if (n != UCS_ERR_NO_RESOURCE || oob_now_s() > deadline) {
            return n;
        }
        progress_idle(c, &idle);
    }
}

ucs_status_t post_am_short(struct ctx *c, uct_ep_h ep, uint8_t id, const uint8_t *msg,
                                  size_t len)
{
    uint64_t header;
    memcpy(&header, msg, 8);
    return POST(c, uct_ep_am_short(ep, id, header, msg + 8, (unsigned)(len - 8)));
}

/* Sizes: the listed ones that fit in [lo, hi], plus hi; sorted, unique. */
unsigned sizes_upto(size_t lo, size_t hi, const size_t *list, unsigned n, size_t *out)
{
    unsigned i, j, k = 0;
    for (i = 0; i < n; i++) {
        if (list[i] >= lo && list[i] < hi) {
            out[k++] = list[i];
        }
    }
    if (hi >= lo) {
        out[k++] = hi;
    }
    for (i = 1; i < k; i++) {
        for (j = i; j > 0 && out[j - 1] > out[j]; j--) {
            size_t t = out[j];
            out[j]     = out[j - 1];
            out[j - 1] = t;
        }
    }
    for (i = 0, j = 0; i < k; i++) {
        if (j == 0 || out[j - 1] != out[i]) {
            out[j++] = out[i];
        }
    }
    return j;
}

size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Splits [buf, buf+len) into `count` iov entries (the last takes the rest). */
void make_iov(struct ctx *c, uct_iov_t *iov, unsigned count, uint8_t *buf, size_t len)
{
    size_t each = len / count, at = 0;
    unsigned i;
    for (i = 0; i < count; i++) {
        iov[i].buffer = buf + at;
        iov[i].length = i + 1 == count ? len - at : each;
        iov[i].memh   = c->memh;
        iov[i].stride = 0;
        iov[i].count  = 1;
        at += iov[i].length;
    }
}


void guard_local(uint8_t *buf, size_t len)
{
    memset(buf - GUARD, LOCAL_GUARD_BYTE, len + 2 * GUARD);
}

/* The get destination holds the pattern and its guards are untouched. */
int got_ok(const uint8_t *buf, size_t len, uint32_t tag, size_t first, char *why,
                  size_t why_len)
{
    long bad = find_bad(tag, buf, len, first);
    size_t j;
    why[0] = '\0';
    if (bad >= 0) {
        snprintf(why, why_len, "byte %ld of %zu differs from the target's data", bad, len);
        return 0;
    }
    for (j = 0; j < GUARD; j++) {
        if (buf[-1 - (long)j] != LOCAL_GUARD_BYTE || buf[len + j] != LOCAL_GUARD_BYTE) {
            snprintf(why, why_len, "the get wrote outside its %zu bytes", len);
            return 0;
        }
    }
    return 1;
}


void unpack_cb(void *arg, const void *data, size_t length)
{
    struct unpack_arg *u = arg;
    u->calls++;
    memcpy(u->dst, data, length < u->len ? length : u->len);
    if (length != u->len) {
        u->len = (size_t)-1; /* reported by the check */
    }
}

/* ==================================================================== AM */



ucs_status_t post_data_am(struct ctx *c, struct am_plan *plan, enum am_op op, size_t len,
                                 const struct am_zcopy_shape *zs, struct comp *cp, const char *what)
{
    uint32_t tag = new_tag(c);
    uint8_t *msg;
    ucs_status_t st = UCS_ERR_INVALID_PARAM;
    uint8_t id = 0;

    if (op == OP_AM_ZCOPY) {
        msg = lalloc(c, len); /* registered: the payload goes zero-copy */
    } else {
        msg = malloc(len);
    }
    make_msg(tag, msg, len);
    switch (op) {
    case OP_AM_SHORT:
        id = AM_SHORT_ID;
        st = post_am_short(c, c->ep, id, msg, len);
        break;
    case OP_AM_SHORT_IOV: {
        uct_iov_t iov[MAX_IOV];
        unsigned cnt = zs ? zs->iovcnt : 1;
        size_t each  = len / cnt, at = 0;
        unsigned i;
        id = AM_IOV_ID;
        for (i = 0; i < cnt; i++) {
            iov[i].buffer = msg + at;
            iov[i].length = i + 1 == cnt ? len - at : each;
            iov[i].memh   = UCT_MEM_HANDLE_NULL;
            iov[i].stride = 0;
            iov[i].count  = 1;
            at += iov[i].length;
        }
        st = POST(c, uct_ep_am_short_iov(c->ep, id, iov, cnt));
        break;
    }
    case OP_AM_BCOPY: {
        ssize_t n;
        id = AM_BCOPY_ID;
        n  = post_am_bcopy(c, c->ep, id, msg, len);
        st = n == (ssize_t)len ? UCS_OK : n < 0 ? (ucs_status_t)n : UCS_ERR_INVALID_PARAM;
        break;
    }
    case OP_AM_ZCOPY: {
        uct_iov_t iov[MAX_IOV];
        size_t hdr = zs->hdr_len;
        unsigned cnt = (unsigned)min_sz(zs->iovcnt, len - hdr);
        id = AM_ZCOPY_ID;
        if (cnt == 0) {
            st = POST(c, uct_ep_am_zcopy(c->ep, id, msg, (unsigned)hdr, NULL, 0, 0, &cp->uc));
        } else {
            make_iov(c, iov, cnt, msg + hdr, len - hdr);
            st = POST(c, uct_ep_am_zcopy(c->ep, id, msg, (unsigned)hdr, iov, cnt, 0, &cp->uc));
        }
        break;
    }
    }
    if (op != OP_AM_ZCOPY) {
        memset(msg, 0, len); /* the post copied it */
        free(msg);
    }
    if (st == UCS_OK || st == UCS_INPROGRESS) {
        plan_add(plan, id, tag, (uint32_t)len, what);
    }
    return st;
}

/* ============================================================== pending */


ucs_status_t pend_post(struct pend *p)
{
    struct ctx *c = p->c;
    if (p->is_am) {
        uint8_t msg[32];
        uint64_t header;
        make_msg(p->tag, msg, sizeof(msg));
        memcpy(&header, msg, 8);
        return uct_ep_am_short(c->ep, AM_SHORT_ID, header, msg + 8, sizeof(msg) - 8);
    } else {
        uint8_t buf[24];
        fill_pat(p->tag, buf, sizeof(buf), 0);
        return uct_ep_put_short(c->ep, buf, sizeof(buf), c->peer_base + p->put_off,
                                c->peer_rkey.rkey);
    }
}

ucs_status_t pend_cb(uct_pending_req_t *self)
{
    struct pend *p = (struct pend *)self;
    ucs_status_t st;
    p->runs++;
    st = pend_post(p);
    if (st == UCS_OK) {
        p->posted++;
    }
    return st;
}

/* A second ep pair (ep2 on both sides), for tests that break it. */
ucs_status_t connect_ep2(struct ctx *c)
{
    uct_ep_params_t epp;
    uint8_t addr[MAX_ADDR];
    size_t len;
    void *peer_ep;
    ucs_status_t st;

    memset(&epp, 0, sizeof(epp));
    epp.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    epp.iface      = c->iface;
    st             = uct_ep_create(&epp, &c->ep2);
    if (st != UCS_OK) {
        return st;
    }
    c->ep2_err_calls  = 0;
    c->ep2_err_status = UCS_OK;
    peer_ep           = rpc(c, CMD_EP2_CREATE, NULL, 0, &len);
    if (len != c->attr.ep_addr_len) {
        die(c, "peer ep address of %zu bytes", len);
    }
    st = uct_ep_get_address(c->ep2, (uct_ep_addr_t *)addr);
    if (st != UCS_OK) {
        free(peer_ep);
        return st;
    }
    free(rpc(c, CMD_EP2_CONNECT, addr, c->attr.ep_addr_len, NULL));
    /* the peer's device address is the one the main ep used */
    st = uct_ep_connect_to_ep(c->ep2, (uct_device_addr_t *)peer_dev_addr,
                              (uct_ep_addr_t *)peer_ep);
    free(peer_ep);
    return st;
}

void destroy_ep2(struct ctx *c)
{
    if (c->ep2 != NULL) {
        uct_ep_destroy(c->ep2);
        c->ep2 = NULL;
    }
    free(rpc(c, CMD_EP2_DESTROY, NULL, 0, NULL));
}

/* ================================================================ target */

static ucs_status_t data_am_cb(void *arg, void *data, size_t length, unsigned flags);

struct am_cb_arg {
    struct ctx *c;
    uint8_t id;
};

static struct am_cb_arg am_args[8];

static void log_am(struct ctx *c, uint8_t id, uint32_t tag, size_t length, int ok, unsigned flags)
{
    if (c->log_count >= AM_LOG_CAPACITY) {
        c->log_overflow++;
        return;
    }
    c->log[c->log_count].id     = id;
    c->log[c->log_count].ok     = (uint8_t)ok;
    c->log[c->log_count].flags  = (uint16_t)flags;
    c->log[c->log_count].tag    = tag;
    c->log[c->log_count].length = (uint32_t)length;
    c->log_count++;
}

static ucs_status_t data_am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    struct am_cb_arg *a = arg;
    struct ctx *c       = a->c;
    uint32_t tag = UINT32_MAX, hdr[2];
    int ok;

    if (a->id == AM_PUTCHK_ID) {
        /* [tag][length][put offset][put length][put tag][0]: check the
         * put's bytes now, inside the handler */
        uint64_t desc[4];
        ok = length == 40;
        if (ok) {
            memcpy(hdr, data, 8);
            memcpy(desc, (uint8_t *)data + 8, 32);
            tag = hdr[0];
            ok  = hdr[1] == length && desc[0] + desc[1] <= c->region_len &&
                 find_bad((uint32_t)desc[2], c->region + desc[0], desc[1], 0) < 0;
        }
    } else if (length == 0) {
        tag = 0; /* an empty AM (zero-length ops) */
        ok  = 1;
    } else {
        ok = check_msg(data, length, &tag);
    }
    log_am(c, a->id, tag, length, ok, flags);
    if (a->id == AM_RETAIN_ID) {
        if (!(flags & UCT_CB_PARAM_FLAG_DESC)) {
            c->retain_no_desc++;
            return UCS_OK;
        }
        if (c->retained_count < MAX_RETAINED) {
            struct retained *r = &c->retained[c->retained_count++];
            r->desc   = data;
            r->tag    = tag;
            r->length = (uint32_t)length;
            return UCS_INPROGRESS;
        }
    }
    return UCS_OK;
}

static void set_handlers(struct ctx *c)
{
    static const uint8_t target_ids[] = { AM_SHORT_ID, AM_BCOPY_ID, AM_ZCOPY_ID,
                                          AM_IOV_ID,   AM_PUTCHK_ID, AM_RETAIN_ID };
    unsigned i;
    ucs_status_t st;
    if (!c->is_target) {
        am_args[AM_REVERSE_ID].c  = c;
        am_args[AM_REVERSE_ID].id = AM_REVERSE_ID;
        st = uct_iface_set_am_handler(c->iface, AM_REVERSE_ID, data_am_cb,
                                      &am_args[AM_REVERSE_ID], 0);
        if (st != UCS_OK) {
            die(c, "uct_iface_set_am_handler: %s", ucs_status_string(st));
        }
        return;
    }
    for (i = 0; i < sizeof(target_ids); i++) {
        uint8_t id = target_ids[i];
        am_args[id].c  = c;
        am_args[id].id = id;
        st = uct_iface_set_am_handler(c->iface, id, data_am_cb, &am_args[id], 0);
        if (st != UCS_OK) {
            die(c, "uct_iface_set_am_handler(%u): %s", id, ucs_status_string(st));
        }
    }
}

static void target_am_report(struct ctx *c, const struct cmd_args *a)
{
    double deadline = oob_now_s() + c->wait_s;
    unsigned idle   = 0;
    while (c->log_count < a->a && oob_now_s() < deadline) {
        progress_idle(c, &idle);
    }
    progress_for(c, (int)a->b);
    msg_send(c, CMD_AM_REPORT, c->log, c->log_count * sizeof(*c->log));
    c->log_count = 0;
}

static void target_event_recv(struct ctx *c, const struct cmd_args *a)
{
    struct cmd_args out = { 0, 0, 0, 0 };
    int fd = -1;
    ucs_status_t st;
    unsigned start = c->log_count;
    double deadline;

    st = uct_iface_event_fd_get(c->iface, &fd);
    if (st == UCS_OK) {
        /* drain, then arm: BUSY means something arrived in between */
        do {
            while (progress(c) != 0) {
            }
            st = uct_iface_event_arm(c->iface, UCT_EVENT_RECV);
        } while (st == UCS_ERR_BUSY);
    }
    out.a = (uint64_t)(int64_t)st;
    msg_send(c, CMD_EVENT_RECV, &out, sizeof(out));
    if (st != UCS_OK) {
        memset(&out, 0, sizeof(out));
        msg_send(c, CMD_EVENT_RECV, &out, sizeof(out));
        return;
    }
    memset(&out, 0, sizeof(out));
    deadline = oob_now_s() + 20;
    while (c->log_count - start < a->a && oob_now_s() < deadline) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        unsigned before   = c->log_count;
        int rc            = poll(&pfd, 1, 10000);
        if (rc <= 0) {
            break; /* 10 s without an event: reported as missing AMs */
        }
        out.b++;
        do {
            while (progress(c) != 0) {
            }
            st = uct_iface_event_arm(c->iface, UCT_EVENT_RECV);
        } while (st == UCS_ERR_BUSY);
        if (c->log_count == before) {
            out.c++;
        }
        if (st != UCS_OK) {
            break;
        }
    }
    out.a = c->log_count - start;
    msg_send(c, CMD_EVENT_RECV, &out, sizeof(out));
}

static void target_reverse(struct ctx *c, const struct cmd_args *a)
{
    struct cmd_args out = { 0, 0, 0, 0 };
    uint32_t base       = 0x70000000u;
    unsigned i;
    uint8_t buf[64];
    for (i = 0; i < a->a; i++) {
        uint8_t msg[100];
        size_t len = 8 + i % 90;
        make_msg(base + i, msg, len);
        if (i % 2 == 0) {
            if (post_am_short(c, c->ep, AM_REVERSE_ID, msg,
                              min_sz(len, c->attr.cap.am.max_short)) != UCS_OK) {
                out.b++;
            }
        } else if (post_am_bcopy(c, c->ep, AM_REVERSE_ID, msg, len) != (ssize_t)len) {
            out.b++;
        }
    }
    fill_pat(base, buf, sizeof(buf), 0);
    if (POST(c, uct_ep_put_short(c->ep, buf, sizeof(buf), c->peer_base + a->b,
                                 c->peer_rkey.rkey)) != UCS_OK) {
        out.b++;
    }
    if (flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL) != UCS_OK) {
        out.b++;
    }
    out.a = base;
    msg_send(c, CMD_REVERSE, &out, sizeof(out));
}

/* Bytes of target memory that differ from what range `r` (off, len, tag,
 * guard) says; *first: where the first one is, relative to the range. */
static uint64_t target_check_range(struct ctx *c, const struct cmd_args *r, long *first)
{
    size_t off = r->a, n = r->b, g = r->d, j;
    int bg     = (uint32_t)r->c == BG_TAG;
    uint64_t bad = 0;
    *first = -1;
    if (off < g || off + n + g > c->region_len) {
        return 1;
    }
    for (j = 0; j < n; j++) {
        if (c->region[off + j] != (bg ? pat(BG_TAG, off + j) : pat((uint32_t)r->c, j))) {
            if (bad++ == 0) {
                *first = (long)j;
            }
        }
    }
    for (j = 0; j < g; j++) {
        size_t lo = off - g + j, hi = off + n + j;
        if (c->region[lo] != pat(BG_TAG, lo) && bad++ == 0) {
            *first = -(long)(g - j);
        }
        if (c->region[hi] != pat(BG_TAG, hi) && bad++ == 0) {
            *first = (long)(n + j);
        }
    }
    return bad;
}

static int target_command(struct ctx *c)
{
    uint32_t type;
    size_t len;
    void *payload = msg_recv(c, &type, &len);
    struct cmd_args a, out;
    memset(&a, 0, sizeof(a));
    memcpy(&a, payload, len < sizeof(a) ? len : sizeof(a));
    memset(&out, 0, sizeof(out));

    switch (type) {
    case CMD_CHECK_MEM: {
        /* a = off, b = len, c = tag (BG_TAG: the background), d = guard */
        long first = 0;
        out.a      = target_check_range(c, &a, &first);
        out.b      = (uint64_t)(int64_t)first;
        msg_send(c, type, &out, sizeof(out));
        break;
    }
    case CMD_CHECK_BATCH: {
        /* the payload: ranges as CHECK_MEM takes them; replies the number
         * of ranges that differ and the index of the first */
        size_t count = len / sizeof(struct cmd_args), i;
        long first   = 0;
        out.b        = UINT64_MAX;
        for (i = 0; i < count; i++) {
            struct cmd_args range;
            memcpy(&range, (uint8_t *)payload + i * sizeof(range), sizeof(range));
            if (target_check_range(c, &range, &first) != 0 && out.a++ == 0) {
                out.b = i;
            }
        }
        msg_send(c, type, &out, sizeof(out));
        break;
    }
    case CMD_FILL:
        if (a.a + a.b <= c->region_len) {
            if (a.c == BG_TAG) {
                size_t j;
                for (j = a.a; j < a.a + a.b; j++) {
                    c->region[j] = pat(BG_TAG, j);
                }
            } else {
                fill_pat((uint32_t)a.c, c->region + a.a, a.b, 0);
            }
        }
        msg_send(c, type, &out, sizeof(out));
        break;
    case CMD_SET64:
        if (a.a + 8 <= c->region_len) {
            memcpy(c->region + a.a, &a.b, 8);
        }
        msg_send(c, type, &out, sizeof(out));
        break;
    case CMD_READ64:
        if (a.a + 8 <= c->region_len) {
            memcpy(&out.a, c->region + a.a, 8);
        }
        msg_send(c, type, &out, sizeof(out));
        break;
    case CMD_AM_REPORT:
        target_am_report(c, &a);
        break;
    case CMD_RETAIN_CHECK: {
        unsigned i;
        out.a = c->retained_count;
        out.c = c->retain_no_desc;
        for (i = 0; i < c->retained_count; i++) {
            uint32_t tag;
            struct retained *r = &c->retained[i];
            if (check_msg(r->desc, r->length, &tag) && tag == r->tag) {
                out.b++;
            }
            uct_iface_release_desc(r->desc);
        }
        c->retained_count = 0;
        msg_send(c, type, &out, sizeof(out));
        break;
    }
    case CMD_EVENT_RECV:
        target_event_recv(c, &a);
        break;
    case CMD_PAUSE:
        usleep((useconds_t)(a.a * 1000));
        msg_send(c, type, &out, sizeof(out));
        break;
    case CMD_REVERSE:
        target_reverse(c, &a);
        break;
    case CMD_EP2_CREATE: {
        uct_ep_params_t epp;
        uint8_t addr[MAX_ADDR];
        ucs_status_t st;
        memset(&epp, 0, sizeof(epp));
        epp.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        epp.iface      = c->iface;
        st             = uct_ep_create(&epp, &c->ep2);
        if (st != UCS_OK) {
            die(c, "uct_ep_create (ep2): %s", ucs_status_string(st));
        }
        st = uct_ep_get_address(c->ep2, (uct_ep_addr_t *)addr);
        if (st != UCS_OK) {
            die(c, "uct_ep_get_address (ep2): %s", ucs_status_string(st));
        }
        msg_send(c, type, addr, c->attr.ep_addr_len);
        break;
    }
    case CMD_EP2_CONNECT: {
        ucs_status_t st = uct_ep_connect_to_ep(c->ep2, (uct_device_addr_t *)peer_dev_addr,
                                               (uct_ep_addr_t *)payload);
        if (st != UCS_OK) {
            die(c, "uct_ep_connect_to_ep (ep2): %s", ucs_status_string(st));
        }
        msg_send(c, type, &out, sizeof(out));
        break;
    }
    case CMD_EP2_DESTROY:
        if (c->ep2 != NULL) {
            uct_ep_destroy(c->ep2);
            c->ep2 = NULL;
        }
        msg_send(c, type, &out, sizeof(out));
        break;
    case CMD_DELAYED_AM: {
        uint8_t msg[16];
        msg_send(c, type, &out, sizeof(out));
        usleep((useconds_t)(a.a * 1000));
        make_msg(0x7f000000u, msg, sizeof(msg));
        if (post_am_short(c, c->ep, AM_REVERSE_ID, msg, sizeof(msg)) != UCS_OK) {
            die(c, "delayed AM: post failed");
        }
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        msg_send(c, type, &out, sizeof(out));
        break;
    }
    case CMD_STATS:
        out.a = c->err_calls;
        out.b = (uint64_t)(int64_t)c->err_status;
        out.c = c->log_overflow;
        msg_send(c, type, &out, sizeof(out));
        break;
    case CMD_QUIT:
        msg_send(c, type, &out, sizeof(out));
        free(payload);
        return 0;
    default:
        die(c, "unknown command %u", type);
    }
    free(payload);
    return 1;
}

static void run_target(struct ctx *c)
{
    unsigned idle = 0;
    for (;;) {
        progress_idle(c, &idle);
        if (sock_readable(c, idle > 64 ? 1 : 0)) {
            if (!target_command(c)) {
                return;
            }
            idle = 0;
        }
    }
}

/* ================================================================= setup */

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    struct ctx *c = arg;
    if (ep != NULL && ep == c->ep2) {
        c->ep2_err_calls++;
        c->ep2_err_status = status;
    } else {
        c->err_calls++;
        c->err_status = status;
        fprintf(stderr, "rc_ops [%s]: error handler: ep %p, %s\n", c->name, (void *)ep,
                ucs_status_string(status));
    }
    return UCS_OK;
}

static void open_transport(struct ctx *c)
{
    uct_component_h *components;
    unsigned count, i, j;
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_ep_params_t epp;
    ucs_status_t st;
    const char *colon = strchr(c->dev_name, ':');
    size_t md_len     = colon ? (size_t)(colon - c->dev_name) : strlen(c->dev_name);

    if (md_len >= sizeof(c->md_name)) {
        die(c, "device name too long: %s", c->dev_name);
    }
    memcpy(c->md_name, c->dev_name, md_len);
    c->md_name[md_len] = 0;

    st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &c->async);
    if (st != UCS_OK) {
        die(c, "ucs_async_context_create: %s", ucs_status_string(st));
    }
    st = uct_worker_create(c->async, UCS_THREAD_MODE_SINGLE, &c->worker);
    if (st != UCS_OK) {
        die(c, "uct_worker_create: %s", ucs_status_string(st));
    }
    st = uct_query_components(&components, &count);
    if (st != UCS_OK) {
        die(c, "uct_query_components: %s", ucs_status_string(st));
    }
    c->component = NULL;
    for (i = 0; i < count && c->component == NULL; i++) {
        uct_component_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK || attr.md_resource_count == 0) {
            continue;
        }
        attr.md_resources = calloc(attr.md_resource_count, sizeof(*attr.md_resources));
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if (uct_component_query(components[i], &attr) == UCS_OK) {
            for (j = 0; j < attr.md_resource_count; j++) {
                if (strcmp(attr.md_resources[j].md_name, c->md_name) == 0) {
                    c->component = components[i];
                }
            }
        }
        free(attr.md_resources);
    }
    uct_release_component_list(components);
    if (c->component == NULL) {
        die(c, "no memory domain '%s'", c->md_name);
    }
    st = uct_md_open(c->component, c->md_name, NULL, &c->md);
    if (st != UCS_OK) {
        die(c, "uct_md_open(%s): %s", c->md_name, ucs_status_string(st));
    }
    st = uct_md_query(c->md, &c->md_attr);
    if (st != UCS_OK) {
        die(c, "uct_md_query: %s", ucs_status_string(st));
    }
    st = uct_md_iface_config_read(c->md, "rc_mlx5", NULL, NULL, &config);
    if (st != UCS_OK) {
        die(c, "uct_md_iface_config_read(rc_mlx5): %s", ucs_status_string(st));
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_mlx5";
    params.mode.device.dev_name = c->dev_name;
    params.err_handler          = err_handler;
    params.err_handler_arg      = c;
    params.err_handler_flags    = 0;
    st = uct_iface_open(c->md, c->worker, &params, config, &c->iface);
    uct_config_release(config);
    if (st != UCS_OK) {
        die(c, "uct_iface_open(rc_mlx5/%s): %s", c->dev_name, ucs_status_string(st));
    }
    st = uct_iface_query(c->iface, &c->attr);
    if (st != UCS_OK) {
        die(c, "uct_iface_query: %s", ucs_status_string(st));
    }
    uct_iface_progress_enable(c->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    set_handlers(c);

    memset(&epp, 0, sizeof(epp));
    epp.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    epp.iface      = c->iface;
    st             = uct_ep_create(&epp, &c->ep);
    if (st != UCS_OK) {
        die(c, "uct_ep_create: %s", ucs_status_string(st));
    }

    c->region_len = c->is_target ? TARGET_REGION_SIZE : LOCAL_REGION_SIZE;
    c->region     = aligned_alloc(4096, c->region_len);
    if (c->region == NULL) {
        die(c, "out of memory");
    }
    for (j = 0; j < c->region_len; j++) {
        c->region[j] = pat(BG_TAG, j);
    }
    st = uct_md_mem_reg(c->md, c->region, c->region_len, UCT_MD_MEM_ACCESS_ALL, &c->memh);
    if (st != UCS_OK) {
        die(c, "uct_md_mem_reg(%zu bytes): %s", c->region_len, ucs_status_string(st));
    }
    c->log = calloc(AM_LOG_CAPACITY, sizeof(*c->log));
    if (c->log == NULL) {
        die(c, "out of memory");
    }
}

/* Address message: dev addr, ep addr, packed rkey, region base and size. */
static void exchange_and_connect(struct ctx *c)
{
    uint8_t out[4 * MAX_ADDR], *in, *p;
    size_t dl = c->attr.device_addr_len, el = c->attr.ep_addr_len, rl = c->md_attr.rkey_packed_size;
    size_t len;
    uint32_t type;
    uint64_t base = (uintptr_t)c->region, rlen = c->region_len;
    ucs_status_t st;

    if (dl > MAX_ADDR || el > MAX_ADDR || rl > MAX_ADDR) {
        die(c, "addresses too long (%zu, %zu, %zu)", dl, el, rl);
    }
    p  = out;
    st = uct_iface_get_device_address(c->iface, (uct_device_addr_t *)p);
    if (st != UCS_OK) {
        die(c, "uct_iface_get_device_address: %s", ucs_status_string(st));
    }
    p += dl;
    st = uct_ep_get_address(c->ep, (uct_ep_addr_t *)p);
    if (st != UCS_OK) {
        die(c, "uct_ep_get_address: %s", ucs_status_string(st));
    }
    p += el;
    st = uct_md_mkey_pack(c->md, c->memh, p);
    if (st != UCS_OK) {
        die(c, "uct_md_mkey_pack: %s", ucs_status_string(st));
    }
    p += rl;
    memcpy(p, &base, 8);
    memcpy(p + 8, &rlen, 8);
    p += 16;
    msg_send(c, 'A', out, (size_t)(p - out));

    in = msg_recv(c, &type, &len);
    if (type != 'A' || len != dl + el + rl + 16) {
        die(c, "bad peer address message (%zu bytes)", len);
    }
    memcpy(peer_dev_addr, in, dl);
    if (!uct_iface_is_reachable(c->iface, (uct_device_addr_t *)in, NULL)) {
        die(c, "the peer's device address is not reachable");
    }
    st = uct_ep_connect_to_ep(c->ep, (uct_device_addr_t *)in, (uct_ep_addr_t *)(in + dl));
    if (st != UCS_OK) {
        die(c, "uct_ep_connect_to_ep: %s", ucs_status_string(st));
    }
    st = uct_rkey_unpack(c->component, in + dl + el, &c->peer_rkey);
    if (st != UCS_OK) {
        die(c, "uct_rkey_unpack: %s", ucs_status_string(st));
    }
    c->have_rkey = 1;
    memcpy(&c->peer_base, in + dl + el + rl, 8);
    memcpy(&rlen, in + dl + el + rl + 8, 8);
    c->peer_len = rlen;
    free(in);
}

static void close_transport(struct ctx *c)
{
    if (c->have_rkey) {
        uct_rkey_release(c->component, &c->peer_rkey);
    }
    if (c->ep2 != NULL) {
        uct_ep_destroy(c->ep2);
    }
    uct_ep_destroy(c->ep);
    uct_md_mem_dereg(c->md, c->memh);
    uct_iface_close(c->iface);
    uct_md_close(c->md);
    uct_worker_destroy(c->worker);
    ucs_async_context_destroy(c->async);
    free(c->region);
    free(c->log);
}

static void print_limits(struct ctx *c)
{
    const uct_iface_attr_t *a = &c->attr;
    Dl_info lib;
    /* which libuct runs this (ours, or an rdma-core-backed build of it) */
    if (dladdr((void *)uct_iface_open, &lib) != 0 && lib.dli_fname != NULL) {
        printf("# library: %s\n", lib.dli_fname);
    }
    printf("# rc_mlx5 on %s: am short %zu bcopy %zu zcopy %zu hdr %zu iov %zu | put short %zu "
           "bcopy %zu zcopy %zu iov %zu | get short %zu bcopy %zu zcopy %zu iov %zu | "
           "cap 0x%" PRIx64 " event 0x%" PRIx64 " | atomic32 op 0x%" PRIx64 " fop 0x%" PRIx64
           " atomic64 op 0x%" PRIx64 " fop 0x%" PRIx64 "\n",
           c->dev_name, a->cap.am.max_short, a->cap.am.max_bcopy, a->cap.am.max_zcopy,
           a->cap.am.max_hdr, a->cap.am.max_iov, a->cap.put.max_short, a->cap.put.max_bcopy,
           a->cap.put.max_zcopy, a->cap.put.max_iov, a->cap.get.max_short, a->cap.get.max_bcopy,
           a->cap.get.max_zcopy, a->cap.get.max_iov, (uint64_t)a->cap.flags,
           (uint64_t)a->cap.event_flags, (uint64_t)a->cap.atomic32.op_flags,
           (uint64_t)a->cap.atomic32.fop_flags, (uint64_t)a->cap.atomic64.op_flags,
           (uint64_t)a->cap.atomic64.fop_flags);
    printf("# env: UCX_SOFT_HCA_LOSS=%s UCX_SOFT_HCA_SEED=%s UCX_RC_RX_QUEUE_LEN=%s "
           "UCX_RC_FC_WND_SIZE=%s\n",
           getenv("UCX_SOFT_HCA_LOSS") ? getenv("UCX_SOFT_HCA_LOSS") : "(unset)",
           getenv("UCX_SOFT_HCA_SEED") ? getenv("UCX_SOFT_HCA_SEED") : "(unset)",
           getenv("UCX_RC_RX_QUEUE_LEN") ? getenv("UCX_RC_RX_QUEUE_LEN") : "(unset)",
           getenv("UCX_RC_FC_WND_SIZE") ? getenv("UCX_RC_FC_WND_SIZE") : "(unset)");
    fflush(stdout);
}

/* The cap flag of every op the suite needs, one check line. */

/* The groups in the order a full run takes them: `id` is what -g takes
 * (and the file rc_ops_<id>.c), `name` what the timing line says. */
static const struct {
    void (*run)(struct ctx *);
    const char *id;
    const char *name;
} groups[] = {
    { test_caps, "caps", "caps" },
    { test_reverse, "reverse", "reverse" },
    { test_put, "put", "put" },
    { test_get, "get", "get" },
    { test_am, "am", "am" },
    { test_atomics, "atomics", "atomics" },
    { test_ordering, "ordering", "ordering" },
    { test_pending, "pending", "pending" },
    { test_flush, "flush", "flush" },
    { test_fence, "fence", "fence" },
    { test_retention, "retention", "retention" },
    { test_events, "events", "events" },
    { test_fc, "fc", "flow control" },
    { test_empty, "empty", "zero length" },
    { test_bad_input, "bad_input", "bad input" },
    { test_remote_error, "remote_error", "remote error" },
    { test_cancel, "cancel", "cancel" },
    { test_destroyed_ep, "destroyed_ep", "destroyed ep" },
};
#define GROUP_COUNT (sizeof(groups) / sizeof(groups[0]))

/* Which groups run: all unless -g named some. */
static int group_selected[GROUP_COUNT];
static int any_group_selected;

/* Marks the groups of a comma-separated list; 0 if a name is unknown. */
static int select_groups(const char *list)
{
    char buf[256];
    char *name, *save = NULL;
    unsigned g;
    snprintf(buf, sizeof(buf), "%s", list);
    for (name = strtok_r(buf, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
        for (g = 0; g < GROUP_COUNT && strcmp(groups[g].id, name) != 0; g++) {
        }
        if (g == GROUP_COUNT) {
            fprintf(stderr, "rc_ops: unknown group '%s' (-l lists them)\n", name);
            return 0;
        }
        group_selected[g]  = 1;
        any_group_selected = 1;
    }
    return 1;
}

static int run_initiator(struct ctx *c)
{
    struct cmd_args st;
    double t0 = oob_now_s();
    unsigned g;
    print_limits(c);
    for (g = 0; g < GROUP_COUNT; g++) {
        double t = oob_now_s();
        unsigned before = c->passed + c->failed;
        if (any_group_selected && !group_selected[g]) {
            continue;
        }
        groups[g].run(c);
        printf("# %s: %.2f s, %u checks\n", groups[g].name, oob_now_s() - t,
               c->passed + c->failed - before);
    }

    st = rpc_args(c, CMD_STATS, 0, 0, 0, 0);
    check(c, st.a == 0 && c->err_calls == 0 && st.c == 0,
          "no error handler call on the main endpoints",
          "initiator %u (%s), target %" PRIu64 " (%s), target log overflow %" PRIu64,
          c->err_calls, ucs_status_string(c->err_calls ? c->err_status : UCS_OK), st.a,
          ucs_status_string((ucs_status_t)(int64_t)st.b), st.c);
    free(rpc(c, CMD_QUIT, NULL, 0, NULL));
    printf("SUMMARY: %u passed, %u failed (%.1f s)\n", c->passed, c->failed, oob_now_s() - t0);
    fflush(stdout);
    return c->failed == 0 ? 0 : 1;
}

static int run_side(int is_target, int sock, const char *dev, unsigned timeout_s)
{
    struct ctx ctx;
    struct ctx *c = &ctx;
    int rc        = 0;
    memset(c, 0, sizeof(*c));
    c->is_target = is_target;
    c->name      = is_target ? "target" : "initiator";
    c->sock      = sock;
    c->dev_name  = dev;
    c->timeout_s = timeout_s;
    /* one stuck wait is reported as its own failure, well before the
     * watchdog ends the run */
    c->wait_s = timeout_s / 5 < 10 ? 10 : timeout_s / 5 > 120 ? 120 : timeout_s / 5;
    signal(SIGALRM, on_alarm);
    alarm(timeout_s);
    open_transport(c);
    exchange_and_connect(c);
    if (is_target) {
        run_target(c);
    } else {
        rc = run_initiator(c);
    }
    close_transport(c);
    close(sock);
    return rc;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: rc_ops [-d DEVICE] [-t SECONDS] [-g GROUP[,GROUP...]] [-l]\n"
                 "  -d DEVICE   rc_mlx5 device (default mlx5_0:1)\n"
                 "  -t SECONDS  watchdog: fail the run after this long (default 600)\n"
                 "  -g GROUPS   run only these groups (repeatable; default all, in order)\n"
                 "  -l          list the groups and exit\n"
                 "Every rc_mlx5 operation between two forked processes, checked at the target.\n"
                 "Exit status 0 only if every check passed.\n");
}

int main(int argc, char **argv)
{
    const char *dev    = "mlx5_0:1";
    unsigned timeout_s = 600;
    int fds[2], opt, status, rc_i = 1, rc_t = 1;
    pid_t target, initiator, pid;

    while ((opt = getopt(argc, argv, "d:t:g:lh")) != -1) {
        switch (opt) {
        case 'g':
            if (!select_groups(optarg)) {
                usage(stderr);
                return 2;
            }
            break;
        case 'l': {
            unsigned g;
            for (g = 0; g < GROUP_COUNT; g++) {
                printf("%s\n", groups[g].id);
            }
            return 0;
        }
        case 'd':
            dev = optarg;
            break;
        case 't':
            timeout_s = (unsigned)strtoul(optarg, NULL, 0);
            if (timeout_s == 0) {
                usage(stderr);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    /* a small flow-control window, so the AM floods go far past it */
    setenv("UCX_RC_FC_WND_SIZE", DEFAULT_FC_WINDOW, 0);
    /* a small receive queue: the retention test cycles it several times and
     * the AM floods go far past it */
    setenv("UCX_RC_RX_QUEUE_LEN", DEFAULT_RX_QUEUE_LEN, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    alarm(timeout_s + 30);

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        perror("rc_ops: socketpair");
        return 1;
    }
    target = fork();
    if (target == 0) {
        close(fds[0]);
        /* a different loss pattern from the initiator's (same seed = same drops) */
        if (getenv("UCX_SOFT_HCA_SEED") != NULL) {
            char seed[32];
            snprintf(seed, sizeof(seed), "%llu",
                     strtoull(getenv("UCX_SOFT_HCA_SEED"), NULL, 0) + 1);
            setenv("UCX_SOFT_HCA_SEED", seed, 1);
        }
        _exit(run_side(1, fds[1], dev, timeout_s));
    }
    initiator = fork();
    if (initiator == 0) {
        close(fds[1]);
        _exit(run_side(0, fds[0], dev, timeout_s));
    }
    close(fds[0]);
    close(fds[1]);
    if (target < 0 || initiator < 0) {
        perror("rc_ops: fork");
        return 1;
    }
    while ((pid = wait(&status)) > 0) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (pid == target) {
            rc_t = code;
        } else if (pid == initiator) {
            rc_i = code;
        }
    }
    if (rc_i != 0 || rc_t != 0) {
        fprintf(stderr, "rc_ops: FAILED (initiator exit %d, target exit %d)\n", rc_i, rc_t);
        return 1;
    }
    printf("rc_ops: PASSED\n");
    return 0;
}
