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
 * Unless the environment sets them, UCX_RC_FC_WND_SIZE=8 and
 * UCX_RC_RX_QUEUE_LEN=256, so the floods go far past the window and the
 * retention test cycles every receive buffer several times.
 *
 * Only the public UCT API is used, so the same binary runs on the soft HCA
 * and on rdma-core; packet loss comes only from the environment
 * (UCX_SOFT_HCA_LOSS). One line per check, a summary, exit 0 only if every
 * check passed; an alarm fails the run if anything hangs.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* UCX 1.13 predates the flag; newer UCX and our headers define it. */
#ifndef UCT_FLUSH_FLAG_REMOTE
#define UCT_FLUSH_FLAG_REMOTE (1u << 1)
#endif

#define TARGET_REGION_SIZE (32u << 20)
#define LOCAL_REGION_SIZE  (8u << 20)
#define GUARD              64         /* background bytes checked around a put */
#define MAX_ZCOPY_TESTED   (1u << 20) /* largest zcopy size exercised */
#define AM_LOG_CAPACITY    (1u << 16)
#define MAX_RETAINED       64
#define MAX_ADDR           1024
#define MAX_IOV            64
#define BG_TAG             0xb6b6b6b6u
#define DEFAULT_FC_WINDOW  "8"
#define DEFAULT_RX_QUEUE_LEN "256"

/* AM ids */
enum {
    AM_SHORT_ID   = 1, /* data AMs: one id per op, to check dispatch by id */
    AM_BCOPY_ID   = 2,
    AM_ZCOPY_ID   = 3,
    AM_IOV_ID     = 4,
    AM_PUTCHK_ID  = 5, /* handler checks a put's bytes in target memory */
    AM_RETAIN_ID  = 6, /* handler keeps the descriptor */
    AM_REVERSE_ID = 7  /* target -> initiator */
};

/* commands, initiator -> target (each answered by one reply) */
enum {
    CMD_CHECK_MEM = 1,  /* off, len, tag, guard -> mismatches, first bad */
    CMD_FILL,           /* off, len, tag (tag BG_TAG: the background) */
    CMD_SET64,          /* off, value */
    CMD_READ64,         /* off -> value */
    CMD_AM_REPORT,      /* expected count, settle ms -> the log since last report */
    CMD_RETAIN_CHECK,   /* -> retained count, intact count; releases them */
    CMD_EVENT_RECV,     /* count: wait for that many AMs blocking on the event fd */
    CMD_PAUSE,          /* ms: no progress for that long (a slow receiver) */
    CMD_REVERSE,        /* count: AMs and a put to the initiator */
    CMD_EP2_CREATE,     /* -> a second ep's address */
    CMD_EP2_CONNECT,    /* peer ep address */
    CMD_EP2_DESTROY,
    CMD_STATS,          /* -> error handler calls */
    CMD_DELAYED_AM,     /* ms: reply, then after that long an AM to the initiator */
    CMD_CHECK_BATCH,    /* CHECK_MEM ranges -> ranges that differ, first of them */
    CMD_QUIT
};

struct msg_hdr {
    uint32_t type;
    uint32_t len;
};

struct cmd_args {
    uint64_t a, b, c, d;
};

struct am_log_entry {
    uint8_t id;
    uint8_t ok;
    uint16_t flags;
    uint32_t tag;
    uint32_t length;
};

struct comp {
    uct_completion_t uc;
    int calls;
    ucs_status_t status;
};

/* The peer's device address (a second ep pair connects to it too). */
static uint8_t peer_dev_addr[MAX_ADDR];

struct retained {
    void *desc;
    uint32_t tag, length;
};

struct ctx {
    int is_target;
    const char *name;
    int sock;
    unsigned timeout_s; /* the watchdog */
    unsigned wait_s;    /* bound of one wait (a post, a flush, a report) */
    const char *dev_name;
    char md_name[64];
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_component_h component;
    uct_md_h md;
    uct_md_attr_t md_attr;
    uct_iface_h iface;
    uct_iface_attr_t attr;
    uct_ep_h ep, ep2;
    unsigned ep2_err_calls; /* the error handler's calls for ep2 */
    ucs_status_t ep2_err_status;
    uint8_t *region;
    size_t region_len;
    uct_mem_h memh;
    uint64_t peer_base;
    size_t peer_len;
    uct_rkey_bundle_t peer_rkey;
    int have_rkey;
    unsigned err_calls;
    ucs_status_t err_status;

    /* AM log (both sides log what their handlers saw) */
    struct am_log_entry *log;
    unsigned log_count;
    unsigned log_overflow;
    struct retained retained[MAX_RETAINED];
    unsigned retained_count;
    unsigned retain_no_desc;

    /* initiator: allocation cursors and results */
    size_t talloc_next, lalloc_next;
    uint32_t next_tag;
    unsigned passed, failed;
};

/* ------------------------------------------------------------------ util */

static void on_alarm(int sig)
{
    static const char msg[] = "rc_ops: FAIL watchdog: the run did not finish in time "
                              "(a peer hung or an operation never completed)\n";
    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(124);
}

static void die(struct ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void die(struct ctx *c, const char *fmt, ...)
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Byte j of the pattern of `tag`. */
static uint8_t pat(uint32_t tag, size_t j)
{
    return (uint8_t)(mix64(((uint64_t)tag << 32) ^ (j / 8)) >> (8 * (j % 8)));
}

static void fill_pat(uint32_t tag, uint8_t *dst, size_t len, size_t first)
{
    size_t j;
    for (j = 0; j < len; j++) {
        dst[j] = pat(tag, first + j);
    }
}

/* Index of the first byte that differs from the pattern, or -1. */
static long find_bad(uint32_t tag, const uint8_t *src, size_t len, size_t first)
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
static void make_msg(uint32_t tag, uint8_t *dst, size_t len)
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

static void write_full(struct ctx *c, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(c->sock, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            die(c, "socket send: %s (the peer is gone)", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
}

static void read_full(struct ctx *c, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = recv(c->sock, p, len, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            die(c, "socket recv: %s", n == 0 ? "the peer closed the socket (it exited)"
                                              : strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
}

static void msg_send(struct ctx *c, uint32_t type, const void *data, size_t len)
{
    struct msg_hdr h = { type, (uint32_t)len };
    write_full(c, &h, sizeof(h));
    if (len > 0) {
        write_full(c, data, len);
    }
}

/* Receives one message; returns its payload (malloc'd, NUL-terminated). */
static void *msg_recv(struct ctx *c, uint32_t *type, size_t *len)
{
    struct msg_hdr h;
    uint8_t *data;
    read_full(c, &h, sizeof(h));
    if (h.len > (64u << 20)) {
        die(c, "socket message of %u bytes", h.len);
    }
    data = malloc(h.len + 1);
    if (data == NULL) {
        die(c, "out of memory");
    }
    read_full(c, data, h.len);
    data[h.len] = 0;
    *type = h.type;
    *len  = h.len;
    return data;
}

static int sock_readable(struct ctx *c, int timeout_ms)
{
    struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
    int rc            = poll(&pfd, 1, timeout_ms);
    return rc > 0;
}

/* --------------------------------------------------------------- progress */

static unsigned progress(struct ctx *c)
{
    return uct_worker_progress(c->worker);
}

/* Progress with a pause when idle: the machine may be small and shared. */
static void progress_idle(struct ctx *c, unsigned *idle)
{
    if (progress(c) != 0) {
        *idle = 0;
    } else if (++*idle > 64) {
        sched_yield();
    }
}

/* Progresses until *calls reaches `want` or the deadline. */
static int wait_calls(struct ctx *c, const int *calls, int want, double seconds)
{
    double deadline = now_s() + seconds;
    unsigned idle   = 0;
    while (*calls < want) {
        if (now_s() > deadline) {
            return 0;
        }
        progress_idle(c, &idle);
    }
    return 1;
}

/* Progresses for `ms` milliseconds (late or duplicate callbacks show up). */
static void progress_for(struct ctx *c, int ms)
{
    double end    = now_s() + ms / 1000.0;
    unsigned idle = 0;
    while (now_s() < end) {
        progress_idle(c, &idle);
    }
}

static void comp_cb(uct_completion_t *self)
{
    struct comp *cp = (struct comp *)self;
    cp->calls++;
    cp->status = self->status;
}

static void comp_init(struct comp *cp)
{
    memset(cp, 0, sizeof(*cp));
    cp->uc.func   = comp_cb;
    cp->uc.count  = 1;
    cp->uc.status = UCS_OK;
    cp->status    = UCS_OK;
}

/* ep flush, polled to the end; returns the final status. */
static ucs_status_t flush_ep_wait(struct ctx *c, uct_ep_h ep, unsigned flags)
{
    double deadline = now_s() + c->wait_s;
    unsigned idle   = 0;
    ucs_status_t st;
    for (;;) {
        st = uct_ep_flush(ep, flags, NULL);
        if (st != UCS_INPROGRESS && st != UCS_ERR_NO_RESOURCE) {
            return st;
        }
        if (now_s() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
        progress_idle(c, &idle);
    }
}

/* --------------------------------------------------------------- checks */

static void check(struct ctx *c, int ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void check(struct ctx *c, int ok, const char *name, const char *fmt, ...)
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
static int comp_ok(const struct comp *cp, ucs_status_t posted, char *why, size_t why_len)
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

static uint32_t new_tag(struct ctx *c)
{
    return ++c->next_tag;
}

/* --------------------------------------------------- initiator -> target */

static void *rpc(struct ctx *c, uint32_t type, const void *arg, size_t len, size_t *reply_len)
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

static struct cmd_args rpc_args(struct ctx *c, uint32_t type, uint64_t a, uint64_t b, uint64_t d3,
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
static int target_mem_is(struct ctx *c, size_t off, size_t len, uint32_t tag, size_t guard,
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
static size_t talloc(struct ctx *c, size_t len)
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
static uint8_t *lalloc(struct ctx *c, size_t len)
{
    size_t need = (len + 2 * GUARD + 63) & ~(size_t)63;
    if (c->lalloc_next + need > c->region_len) {
        c->lalloc_next = 0;
    }
    c->lalloc_next += need;
    return c->region + c->lalloc_next - need + GUARD;
}

/* ------------------------------------------------------ AM expectations */

struct am_expect {
    uint8_t id;
    uint32_t tag, length;
    char what[48];
};

struct am_plan {
    struct am_expect *e;
    unsigned n, cap;
};

static void plan_add(struct am_plan *p, uint8_t id, uint32_t tag, uint32_t length, const char *what)
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
static void am_report_check(struct ctx *c, const struct am_plan *p, int settle_ms, int per_entry,
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

/* Repeats `expr` (a ucs_status_t) while the ep is out of resources. */
#define POST(c, expr) \
    ({ \
        ucs_status_t _st; \
        double _deadline = now_s() + (c)->wait_s; \
        unsigned _idle   = 0; \
        for (;;) { \
            _st = (expr); \
            if (_st != UCS_ERR_NO_RESOURCE || now_s() > _deadline) { \
                break; \
            } \
            progress_idle((c), &_idle); \
        } \
        _st; \
    })

struct pack_arg {
    const uint8_t *src;
    size_t len;
};

static size_t pack_cb(void *dest, void *arg)
{
    const struct pack_arg *p = arg;
    memcpy(dest, p->src, p->len);
    return p->len;
}

static ssize_t post_am_bcopy(struct ctx *c, uct_ep_h ep, uint8_t id, const uint8_t *msg, size_t len)
{
    struct pack_arg pa = { msg, len };
    double deadline    = now_s() + c->wait_s;
    unsigned idle      = 0;
    ssize_t n;
    for (;;) {
        n = uct_ep_am_bcopy(ep, id, pack_cb, &pa, 0);
        if (n != UCS_ERR_NO_RESOURCE || now_s() > deadline) {
            return n;
        }
        progress_idle(c, &idle);
    }
}

static ucs_status_t post_am_short(struct ctx *c, uct_ep_h ep, uint8_t id, const uint8_t *msg,
                                  size_t len)
{
    uint64_t header;
    memcpy(&header, msg, 8);
    return POST(c, uct_ep_am_short(ep, id, header, msg + 8, (unsigned)(len - 8)));
}

/* Sizes: the listed ones that fit in [lo, hi], plus hi; sorted, unique. */
static unsigned sizes_upto(size_t lo, size_t hi, const size_t *list, unsigned n, size_t *out)
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

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Splits [buf, buf+len) into `count` iov entries (the last takes the rest). */
static void make_iov(struct ctx *c, uct_iov_t *iov, unsigned count, uint8_t *buf, size_t len)
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

/* =================================================================== RMA */

static void test_put(struct ctx *c)
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
        double deadline    = now_s() + c->wait_s;
        unsigned idle      = 0;
        ssize_t r;
        ucs_status_t st;
        fill_pat(tag, buf, sizes[i], 0);
        do {
            r = uct_ep_put_bcopy(c->ep, pack_cb, &pa, c->peer_base + off, c->peer_rkey.rkey);
            if (r == UCS_ERR_NO_RESOURCE) {
                progress_idle(c, &idle);
            }
        } while (r == UCS_ERR_NO_RESOURCE && now_s() < deadline);
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

/* Local guard bytes around a get destination. */
#define LOCAL_GUARD_BYTE 0xa5

static void guard_local(uint8_t *buf, size_t len)
{
    memset(buf - GUARD, LOCAL_GUARD_BYTE, len + 2 * GUARD);
}

/* The get destination holds the pattern and its guards are untouched. */
static int got_ok(const uint8_t *buf, size_t len, uint32_t tag, size_t first, char *why,
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

struct unpack_arg {
    uint8_t *dst;
    size_t len;
    int calls;
};

static void unpack_cb(void *arg, const void *data, size_t length)
{
    struct unpack_arg *u = arg;
    u->calls++;
    memcpy(u->dst, data, length < u->len ? length : u->len);
    if (length != u->len) {
        u->len = (size_t)-1; /* reported by the check */
    }
}

static void test_get(struct ctx *c)
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
    unsigned early_ok = 0;
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
            if (st != UCS_OK && st != UCS_INPROGRESS) {
                check(c, 0, name, "returned %s", ucs_status_string(st));
                continue;
            }
            /* UCS_OK would promise the data is in place now (what UCX's
             * callers read it as); UCS_INPROGRESS: in place once a flush
             * completes */
            if (st == UCS_OK && !got_ok(dst, sizes[i], src_tag, at, why, sizeof(why))) {
                early_ok++;
            }
            st = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
            if (st != UCS_OK) {
                check(c, 0, name, "flush: %s", ucs_status_string(st));
                continue;
            }
            check(c, got_ok(dst, sizes[i], src_tag, at, why, sizeof(why)), name, "%s", why);
        }
        check(c, early_ok == 0, "get_short: UCS_OK only with the data already in place",
              "%u of %u returned UCS_OK before their data was in the buffer", early_ok, n);
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

/* ==================================================================== AM */

/* Posts one data AM carrying message (tag, len) with `op`; adds it to the
 * plan. Returns the post status (bcopy: UCS_OK if it packed len bytes). */
enum am_op { OP_AM_SHORT, OP_AM_SHORT_IOV, OP_AM_BCOPY, OP_AM_ZCOPY };

struct am_zcopy_shape {
    size_t hdr_len;
    unsigned iovcnt;
};

static ucs_status_t post_data_am(struct ctx *c, struct am_plan *plan, enum am_op op, size_t len,
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

static void test_am(struct ctx *c)
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

/* ============================================================== atomics */

static uint64_t apply_op(uct_atomic_op_t op, uint64_t old, uint64_t v, uint64_t mask)
{
    uint64_t r;
    switch (op) {
    case UCT_ATOMIC_OP_ADD: r = old + v; break;
    case UCT_ATOMIC_OP_AND: r = old & v; break;
    case UCT_ATOMIC_OP_OR: r = old | v; break;
    case UCT_ATOMIC_OP_XOR: r = old ^ v; break;
    case UCT_ATOMIC_OP_SWAP: r = v; break;
    default: r = old; break;
    }
    return (old & ~mask) | (r & mask);
}

static const char *const atomic_names[] = { "add", "and", "or", "xor", "swap", "cswap" };

/* One atomic on a fresh 16-byte target slot: the 64-bit words around the
 * operand hold known values, so a write to the wrong bytes shows. */
static void one_atomic(struct ctx *c, int bits, int fetch, uct_atomic_op_t op, int cswap_hit,
                       unsigned variant)
{
    uint64_t init  = mix64(c->next_tag * 77u + variant) | 0x0101010101010101ull;
    uint64_t value = mix64(init + 5), mask = bits == 64 ? ~0ull : 0xffffffffull;
    size_t slot    = talloc(c, 16);
    /* 32-bit ops at the upper half of the word once, to catch address slips */
    size_t shift   = (bits == 32 && (variant & 1)) ? 4 : 0;
    uint64_t word_mask = mask << (8 * shift), expect_word, expect_fetch, word;
    uint64_t *result64 = (uint64_t *)lalloc(c, 8);
    uint32_t *result32 = (uint32_t *)result64;
    uint64_t remote    = c->peer_base + slot + shift;
    uint64_t compare;
    struct comp cp;
    ucs_status_t st = UCS_ERR_UNSUPPORTED;
    char name[96], why[256] = "";
    int ok;
    uint64_t flags_have = bits == 32 ? (fetch ? c->attr.cap.atomic32.fop_flags
                                              : c->attr.cap.atomic32.op_flags)
                                     : (fetch ? c->attr.cap.atomic64.fop_flags
                                              : c->attr.cap.atomic64.op_flags);

    if (op == UCT_ATOMIC_OP_CSWAP) {
        snprintf(name, sizeof(name), "atomic_cswap%d (%s)", bits, cswap_hit ? "match" : "no match");
    } else {
        snprintf(name, sizeof(name), "atomic%d_%s %s%s", bits, fetch ? "fetch" : "post",
                 atomic_names[op], variant ? " (upper half)" : "");
    }
    if (!(flags_have & UCS_BIT(op))) {
        check(c, 0, name, "the iface does not advertise it");
        return;
    }
    rpc_args(c, CMD_SET64, slot, init, 0, 0);
    rpc_args(c, CMD_SET64, slot + 8, ~init, 0, 0);
    *result64 = 0x5a5a5a5a5a5a5a5aull;
    comp_init(&cp);
    compare = cswap_hit ? (init >> (8 * shift)) & mask : ((init >> (8 * shift)) & mask) ^ 1;
    if (bits == 64) {
        if (op == UCT_ATOMIC_OP_CSWAP) {
            st = POST(c, uct_ep_atomic_cswap64(c->ep, compare, value, remote, c->peer_rkey.rkey,
                                               result64, &cp.uc));
        } else if (fetch) {
            st = POST(c, uct_ep_atomic64_fetch(c->ep, op, value, result64, remote,
                                               c->peer_rkey.rkey, &cp.uc));
        } else {
            st = POST(c, uct_ep_atomic64_post(c->ep, op, value, remote, c->peer_rkey.rkey));
        }
    } else {
        if (op == UCT_ATOMIC_OP_CSWAP) {
            st = POST(c, uct_ep_atomic_cswap32(c->ep, (uint32_t)compare, (uint32_t)value, remote,
                                               c->peer_rkey.rkey, result32, &cp.uc));
        } else if (fetch) {
            st = POST(c, uct_ep_atomic32_fetch(c->ep, op, (uint32_t)value, result32, remote,
                                               c->peer_rkey.rkey, &cp.uc));
        } else {
            st = POST(c, uct_ep_atomic32_post(c->ep, op, (uint32_t)value, remote,
                                              c->peer_rkey.rkey));
        }
    }
    if (fetch && st == UCS_INPROGRESS) {
        wait_calls(c, &cp.calls, 1, c->wait_s);
    }
    if (st == UCS_OK || st == UCS_INPROGRESS) {
        ucs_status_t fst = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        if (fst != UCS_OK) {
            check(c, 0, name, "flush: %s", ucs_status_string(fst));
            return;
        }
    }
    progress_for(c, 1);
    if (!fetch && st != UCS_OK) {
        check(c, 0, name, "returned %s (a post completes at once)", ucs_status_string(st));
        return;
    }
    if (fetch && !comp_ok(&cp, st, why, sizeof(why))) {
        check(c, 0, name, "%s", why);
        return;
    }
    /* expected memory */
    {
        uint64_t old = (init >> (8 * shift)) & mask, next;
        if (op == UCT_ATOMIC_OP_CSWAP) {
            next = cswap_hit ? (value & mask) : old;
        } else {
            next = apply_op(op, old, value, mask);
        }
        expect_word  = (init & ~word_mask) | ((next & mask) << (8 * shift));
        expect_fetch = old;
    }
    word = rpc_args(c, CMD_READ64, slot, 0, 0, 0).a;
    ok   = word == expect_word;
    if (!ok) {
        snprintf(why, sizeof(why), "target word 0x%016" PRIx64 ", expected 0x%016" PRIx64
                 " (initial 0x%016" PRIx64 ", operand 0x%" PRIx64 ")",
                 word, expect_word, init, value & mask);
    }
    if (ok && rpc_args(c, CMD_READ64, slot + 8, 0, 0, 0).a != ~init) {
        ok = 0;
        snprintf(why, sizeof(why), "the next word at the target changed");
    }
    if (ok && fetch) {
        uint64_t got = bits == 64 ? *result64 : *result32;
        if (got != expect_fetch) {
            ok = 0;
            snprintf(why, sizeof(why), "fetched 0x%" PRIx64 ", the old value was 0x%" PRIx64,
                     got, expect_fetch);
        } else if (bits == 32 && result32[1] != 0x5a5a5a5au) {
            ok = 0;
            snprintf(why, sizeof(why), "the 32-bit result wrote past its 4 bytes");
        }
    }
    check(c, ok, name, "%s", why);
}

/* Many fetch-adds in flight at once: each fetches the sum of those before. */
static void atomic_chain(struct ctx *c, int bits)
{
    enum { N = 200 };
    size_t slot = talloc(c, 8);
    uint64_t *res = (uint64_t *)lalloc(c, N * 8);
    struct comp *cps = calloc(N, sizeof(*cps));
    ucs_status_t st[N];
    uint64_t sum = 0, word;
    unsigned i, bad = 0;
    char name[64], why[256] = "";
    int ok;

    snprintf(name, sizeof(name), "atomic%d_fetch add x%d in flight", bits, N);
    rpc_args(c, CMD_SET64, slot, 0, 0, 0);
    for (i = 0; i < N; i++) {
        comp_init(&cps[i]);
        res[i] = ~0ull;
        if (bits == 64) {
            st[i] = POST(c, uct_ep_atomic64_fetch(c->ep, UCT_ATOMIC_OP_ADD, i + 1, &res[i],
                                                  c->peer_base + slot, c->peer_rkey.rkey,
                                                  &cps[i].uc));
        } else {
            st[i] = POST(c, uct_ep_atomic32_fetch(c->ep, UCT_ATOMIC_OP_ADD, i + 1,
                                                  (uint32_t *)&res[i], c->peer_base + slot,
                                                  c->peer_rkey.rkey, &cps[i].uc));
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    progress_for(c, 2);
    for (i = 0; i < N; i++) {
        uint64_t got = bits == 64 ? res[i] : (uint64_t)*(uint32_t *)&res[i];
        if (!comp_ok(&cps[i], st[i], why, sizeof(why)) || got != sum) {
            if (bad++ == 0 && why[0] == '\0') {
                snprintf(why, sizeof(why), "op %u fetched %" PRIu64 ", expected %" PRIu64, i, got,
                         sum);
            }
        }
        sum += i + 1;
    }
    word = rpc_args(c, CMD_READ64, slot, 0, 0, 0).a;
    if (bits == 32) {
        word &= 0xffffffffull;
    }
    ok = bad == 0 && word == sum;
    if (bad == 0 && word != sum) {
        snprintf(why, sizeof(why), "target counter %" PRIu64 ", expected %" PRIu64, word, sum);
    }
    check(c, ok, name, "%u of %d wrong %s", bad, N, why);
    free(cps);
}

static void test_atomics(struct ctx *c)
{
    int bits;
    uct_atomic_op_t op;
    for (bits = 32; bits <= 64; bits += 32) {
        for (op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_XOR; op++) {
            one_atomic(c, bits, 0, op, 0, 0);
        }
        for (op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_SWAP; op++) {
            one_atomic(c, bits, 1, op, 0, 0);
        }
        if (bits == 32) {
            one_atomic(c, bits, 0, UCT_ATOMIC_OP_ADD, 0, 1);
            one_atomic(c, bits, 1, UCT_ATOMIC_OP_XOR, 0, 1);
        }
        one_atomic(c, bits, 1, UCT_ATOMIC_OP_CSWAP, 1, 0);
        one_atomic(c, bits, 1, UCT_ATOMIC_OP_CSWAP, 0, 0);
        atomic_chain(c, bits);
    }
}

/* ============================================================= ordering */

static void test_ordering(struct ctx *c)
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
        uint64_t r = mix64(i + 1000);
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

/* ============================================================== pending */

struct pend {
    uct_pending_req_t req;
    struct ctx *c;
    struct am_plan *plan;
    unsigned seq;
    int runs;       /* callback invocations */
    int posted;     /* successful posts from the callback */
    int is_am;      /* an am_short; else a put_short to put_off */
    size_t put_off;
    uint32_t tag;
};

static ucs_status_t pend_post(struct pend *p)
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

static ucs_status_t pend_cb(uct_pending_req_t *self)
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

static void test_pending(struct ctx *c)
{
    enum { N = 3000 };
    struct pend *ps     = calloc(N, sizeof(*ps));
    struct am_plan plan = { 0 };
    unsigned i, direct = 0, queued = 0, no_resource = 0, bad = 0, bad_puts = 0, n_puts = 0;
    int pending_mode = 0;
    double deadline;
    unsigned idle = 0;

    /* puts without progress until the send ring (or the CQ credits) runs
     * out; then puts and AMs alternate, all through the pending queue (AMs
     * alone would meet the flow-control window first) */
    for (i = 0; i < N; i++) {
        struct pend *p = &ps[i];
        ucs_status_t st;
        p->c        = c;
        p->seq      = i;
        p->tag      = new_tag(c);
        p->req.func = pend_cb;
        p->put_off  = talloc(c, 24);
        if (!pending_mode) {
            st = pend_post(p);
            if (st == UCS_OK) {
                p->posted++;
                direct++;
                continue;
            }
            if (st != UCS_ERR_NO_RESOURCE) {
                check(c, 0, "pending: post", "op %u returned %s", i, ucs_status_string(st));
                bad++;
                continue;
            }
            no_resource++;
            pending_mode = 1;
        }
        p->is_am = i % 2 == 0;
        if (p->is_am) {
            plan_add(&plan, AM_SHORT_ID, p->tag, 32, "pending");
        }
        /* from the first NO_RESOURCE on, everything queues (keeps order) */
        for (;;) {
            ucs_status_t st2 = uct_ep_pending_add(c->ep, &p->req, 0);
            if (st2 == UCS_OK) {
                queued++;
                break;
            }
            if (st2 == UCS_ERR_BUSY) {
                /* resources came back and the queue is empty: post now */
                st2 = pend_post(p);
                if (st2 == UCS_OK) {
                    p->posted++;
                    direct++;
                    break;
                }
                if (st2 == UCS_ERR_NO_RESOURCE) {
                    continue;
                }
            }
            check(c, 0, "pending: pending_add", "op %u: %s", i, ucs_status_string(st2));
            bad++;
            break;
        }
    }
    check(c, no_resource > 0 && queued > 0, "pending: a full send queue returns NO_RESOURCE",
          "%u puts posted before the first NO_RESOURCE, %u ops queued with uct_ep_pending_add",
          direct, queued);
    if (queued > 0) {
        /* nothing progressed since: the queue is still there */
        ucs_status_t fst = uct_ep_flush(c->ep, UCT_FLUSH_FLAG_LOCAL, NULL);
        check(c, fst == UCS_ERR_NO_RESOURCE,
              "pending: ep flush with requests pending returns NO_RESOURCE", "returned %s",
              ucs_status_string(fst));
    }
    /* progress dispatches the queue */
    deadline = now_s() + c->wait_s;
    for (;;) {
        unsigned done = 0;
        for (i = 0; i < N; i++) {
            done += ps[i].posted > 0;
        }
        if (done == N || now_s() > deadline) {
            break;
        }
        progress_idle(c, &idle);
    }
    if (flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL) != UCS_OK) {
        bad++;
    }
    progress_for(c, 2);
    {
        unsigned never = 0, twice = 0, ran = 0;
        for (i = 0; i < N; i++) {
            never += ps[i].posted == 0;
            twice += ps[i].posted > 1;
            ran += ps[i].runs > 0;
        }
        check(c, never == 0 && twice == 0 && ran == queued,
              "pending: every pending callback ran and posted exactly once",
              "%u queued, %u callbacks ran, %u never posted, %u posted twice", queued, ran, never,
              twice);
    }
    am_report_check(c, &plan, 20, 0, "pending: queued AMs arrive once, in posting order");
    {
        /* every put, checked at the target in one command */
        struct cmd_args *ranges = calloc(N, sizeof(*ranges));
        struct cmd_args r;
        size_t n_ranges = 0, rlen;
        void *reply;
        for (i = 0; i < N; i++) {
            if (ps[i].is_am) {
                continue;
            }
            ranges[n_ranges].a = ps[i].put_off;
            ranges[n_ranges].b = 24;
            ranges[n_ranges].c = ps[i].tag;
            ranges[n_ranges].d = 8;
            n_ranges++;
        }
        reply = rpc(c, CMD_CHECK_BATCH, ranges, n_ranges * sizeof(*ranges), &rlen);
        memcpy(&r, reply, sizeof(r));
        free(reply);
        free(ranges);
        bad_puts = (unsigned)r.a;
        if (bad_puts > 0) {
            fprintf(stderr, "  pending: %u puts wrong at the target, the first is put #%" PRIu64
                            "\n", bad_puts, r.b);
        }
        n_puts = (unsigned)n_ranges;
    }
    check(c, bad_puts == 0 && bad == 0, "pending: every put landed at the target",
          "%u of %u wrong", bad_puts, n_puts);
    free(ps);
    free(plan.e);
}

/* ========================================================== flush, fence */

static void test_flush(struct ctx *c)
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
            double deadline = now_s() + c->wait_s;
            unsigned idle   = 0;
            unsigned flags  = k == 2 ? UCT_FLUSH_FLAG_LOCAL : UCT_FLUSH_FLAG_REMOTE;
            while ((st = uct_iface_flush(c->iface, flags, NULL)) == UCS_INPROGRESS ||
                   st == UCS_ERR_NO_RESOURCE) {
                if (now_s() > deadline) {
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

static void test_fence(struct ctx *c)
{
    enum { ROUNDS = 20 };
    unsigned i, bad = 0;
    char why[256] = "";
    ucs_status_t st, pst;

    /* put, fence, get of the same bytes: the get sees the put */
    for (i = 0; i < ROUNDS; i++) {
        size_t len   = (size_t[]){ 64, 4096, 20000, 100000 }[i % 4];
        uint32_t tag = new_tag(c);
        size_t off   = talloc(c, len);
        uint8_t *src = lalloc(c, len), *dst = lalloc(c, len);
        uct_iov_t siov, diov;
        struct comp pc, gc;
        comp_init(&pc);
        comp_init(&gc);
        fill_pat(tag, src, len, 0);
        guard_local(dst, len);
        make_iov(c, &siov, 1, src, len);
        make_iov(c, &diov, 1, dst, len);
        pst = POST(c, uct_ep_put_zcopy(c->ep, &siov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                       &pc.uc));
        if (i % 2 == 0) {
            uct_ep_fence(c->ep, 0);
        } else {
            uct_iface_fence(c->iface, 0);
        }
        st = POST(c, uct_ep_get_zcopy(c->ep, &diov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                      &gc.uc));
        if (st == UCS_INPROGRESS) {
            wait_calls(c, &gc.calls, 1, c->wait_s);
        }
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        progress_for(c, 1);
        if (!comp_ok(&pc, pst, why, sizeof(why)) || !comp_ok(&gc, st, why, sizeof(why)) ||
            !got_ok(dst, len, tag, 0, why, sizeof(why))) {
            if (bad++ == 0) {
                fprintf(stderr, "  fence round %u (%zu bytes): %s\n", i, len, why);
            }
        }
    }
    check(c, bad == 0, "fence: put, fence (ep and iface), get: the get sees the put",
          "%u of %u rounds wrong", bad, ROUNDS);

    /* put, fence, fetch-add on the same word: the atomic sees the put */
    bad = 0;
    for (i = 0; i < ROUNDS; i++) {
        size_t off     = talloc(c, 8);
        uint64_t v     = mix64(i + 99), *res = (uint64_t *)lalloc(c, 8);
        struct comp fc;
        comp_init(&fc);
        *res = 0;
        st   = POST(c, uct_ep_put_short(c->ep, &v, 8, c->peer_base + off, c->peer_rkey.rkey));
        uct_ep_fence(c->ep, 0);
        st = POST(c, uct_ep_atomic64_fetch(c->ep, UCT_ATOMIC_OP_ADD, 1, res, c->peer_base + off,
                                           c->peer_rkey.rkey, &fc.uc));
        if (st == UCS_INPROGRESS) {
            wait_calls(c, &fc.calls, 1, c->wait_s);
        }
        progress_for(c, 1);
        if (!comp_ok(&fc, st, why, sizeof(why)) || *res != v) {
            if (bad++ == 0) {
                fprintf(stderr, "  fence+atomic round %u: fetched 0x%" PRIx64 ", put 0x%" PRIx64
                                " %s\n", i, *res, v, why);
            }
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    check(c, bad == 0, "fence: put_short, fence, fetch-add: the atomic sees the put",
          "%u of %u rounds wrong", bad, ROUNDS);
}

/* A second ep pair (ep2 on both sides), for tests that break it. */
static ucs_status_t connect_ep2(struct ctx *c)
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

static void destroy_ep2(struct ctx *c)
{
    if (c->ep2 != NULL) {
        uct_ep_destroy(c->ep2);
        c->ep2 = NULL;
    }
    free(rpc(c, CMD_EP2_DESTROY, NULL, 0, NULL));
}

/* A put outside the target's registration: the target refuses it (remote
 * access error), the ep fails once, with the error handler called once, the
 * op after it completes with the error, new posts fail, nothing was written,
 * and the main ep pair is unaffected. Runs on a second ep pair. */
static void test_remote_error(struct ctx *c)
{
    uint64_t v = 0x1122334455667788ull;
    size_t off = talloc(c, 256);
    uint8_t *src = lalloc(c, 256);
    uct_iov_t iov;
    struct comp cp;
    ucs_status_t st_bad, st_next, st_after;
    double deadline;
    unsigned idle = 0;
    char why[256] = "";
    struct am_plan plan = { 0 };

    st_bad = connect_ep2(c);
    if (st_bad != UCS_OK) {
        check(c, 0, "remote access error", "a second ep pair: %s", ucs_status_string(st_bad));
        return;
    }
    fill_pat(new_tag(c), src, 256, 0);
    make_iov(c, &iov, 1, src, 256);
    comp_init(&cp);
    /* past the end of the target's registered region */
    st_bad  = POST(c, uct_ep_put_short(c->ep2, &v, 8, c->peer_base + c->peer_len + 4096,
                                       c->peer_rkey.rkey));
    st_next = POST(c, uct_ep_put_zcopy(c->ep2, &iov, 1, c->peer_base + off, c->peer_rkey.rkey,
                                       &cp.uc));
    deadline = now_s() + c->wait_s;
    while ((c->ep2_err_calls == 0 || (st_next == UCS_INPROGRESS && cp.calls == 0)) &&
           now_s() < deadline) {
        progress_idle(c, &idle);
    }
    progress_for(c, 50);
    check(c, c->ep2_err_calls == 1 && c->ep2_err_status != UCS_OK,
          "remote access error: the error handler runs once for the ep",
          "put_short returned %s; %u calls, status %s", ucs_status_string(st_bad),
          c->ep2_err_calls, ucs_status_string(c->ep2_err_status));
    check(c, st_next == UCS_INPROGRESS && cp.calls == 1 && cp.status != UCS_OK,
          "remote access error: the op posted after it completes once, with an error",
          "posted %s, %d calls, status %s", ucs_status_string(st_next), cp.calls,
          ucs_status_string(cp.status));
    st_after = uct_ep_put_short(c->ep2, &v, 8, c->peer_base + off, c->peer_rkey.rkey);
    check(c, st_after != UCS_OK && st_after != UCS_INPROGRESS &&
                     st_after != UCS_ERR_NO_RESOURCE,
          "remote access error: posts on the failed ep return its error", "returned %s",
          ucs_status_string(st_after));
    check(c, target_mem_is(c, off, 256, BG_TAG, GUARD, why, sizeof(why)),
          "remote access error: nothing of the failed ep's ops was written", "%s", why);
    destroy_ep2(c);
    post_data_am(c, &plan, OP_AM_SHORT, 32, NULL, NULL, "after the error");
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    am_report_check(c, &plan, 0, 0, "remote access error: the main ep pair still works");
    free(plan.e);
}

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

static void test_cancel(struct ctx *c)
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

/* A destroyed ep (a second pair, destroyed on this side only): every op on
 * its stale handle returns UCS_ERR_INVALID_PARAM and does nothing — no pack
 * or purge callback, no completion, nothing at the target. Built against
 * UCX's headers these calls are UCX's inline functions: they read the
 * handle's iface pointer themselves, which must stay readable (the library
 * keeps a tombstone until the iface closes). */
static unsigned destroyed_callbacks;

static size_t destroyed_pack_cb(void *dest, void *arg)
{
    (void)dest;
    (void)arg;
    destroyed_callbacks++;
    return 8;
}

static void destroyed_purge_cb(uct_pending_req_t *req, void *arg)
{
    (void)req;
    (void)arg;
    destroyed_callbacks++;
}

static void test_destroyed_ep(struct ctx *c)
{
    size_t off    = talloc(c, 256);
    uint8_t *src  = lalloc(c, 256);
    uint64_t rkey = c->peer_rkey.rkey, raddr = c->peer_base + off, v = 7;
    struct am_plan none = { 0 };
    struct pend pending;
    uct_iov_t iov;
    struct comp cp;
    ucs_status_t st;
    ssize_t n;
    uct_ep_h dead;
    char why[256] = "";

    st = connect_ep2(c);
    if (st != UCS_OK) {
        check(c, 0, "destroyed ep", "a second ep pair: %s", ucs_status_string(st));
        return;
    }
    dead   = c->ep2;
    c->ep2 = NULL;
    uct_ep_destroy(dead);
    destroyed_callbacks = 0;
    fill_pat(new_tag(c), src, 256, 0);
    make_iov(c, &iov, 1, src, 256);
    comp_init(&cp);
    memset(&pending, 0, sizeof(pending));
    pending.req.func = pend_cb;
    pending.c        = c;
#define EXPECT_DESTROYED(label, expr) \
    do { \
        st = (expr); \
        check(c, st == UCS_ERR_INVALID_PARAM, "destroyed ep: " label, "returned %s (want %s)", \
              ucs_status_string(st), ucs_status_string(UCS_ERR_INVALID_PARAM)); \
    } while (0)
    EXPECT_DESTROYED("put_short", uct_ep_put_short(dead, src, 8, raddr, rkey));
    EXPECT_DESTROYED("put_zcopy", uct_ep_put_zcopy(dead, &iov, 1, raddr, rkey, &cp.uc));
    EXPECT_DESTROYED("am_short", uct_ep_am_short(dead, AM_SHORT_ID, 0, src, 8));
    EXPECT_DESTROYED("atomic64_post add",
                     uct_ep_atomic64_post(dead, UCT_ATOMIC_OP_ADD, 1, raddr, rkey));
    EXPECT_DESTROYED("atomic_cswap64",
                     uct_ep_atomic_cswap64(dead, 0, 1, raddr, rkey, &v, &cp.uc));
    EXPECT_DESTROYED("flush", uct_ep_flush(dead, 0, &cp.uc));
    EXPECT_DESTROYED("fence", uct_ep_fence(dead, 0));
    EXPECT_DESTROYED("pending_add", uct_ep_pending_add(dead, &pending.req, 0));
#undef EXPECT_DESTROYED
    n = uct_ep_am_bcopy(dead, AM_SHORT_ID, destroyed_pack_cb, NULL, 0);
    check(c, n == UCS_ERR_INVALID_PARAM, "destroyed ep: am_bcopy", "returned %zd", n);
    uct_ep_pending_purge(dead, destroyed_purge_cb, NULL);
    progress_for(c, 5);
    check(c, destroyed_callbacks == 0 && cp.calls == 0 && pending.runs == 0,
          "destroyed ep: no pack, purge, pending or completion callback ran",
          "%u pack/purge callbacks, %d completions, pending ran %d times", destroyed_callbacks,
          cp.calls, (int)pending.runs);
    am_report_check(c, &none, 300, 0, "destroyed ep: the target received no AM");
    check(c, target_mem_is(c, off, 256, BG_TAG, GUARD, why, sizeof(why)),
          "destroyed ep: target memory untouched", "%s", why);
    destroy_ep2(c);
}

/* ============================================================ retention */

static void test_retention(struct ctx *c)
{
    enum { RETAIN = 24 };
    const char *rxq_env = getenv("UCX_RC_RX_QUEUE_LEN");
    unsigned rxq        = rxq_env ? (unsigned)strtoul(rxq_env, NULL, 0) : 4096;
    unsigned filler     = 4 * rxq, filler_len = 512;
    char name[200];
    struct am_plan plan = { 0 };
    unsigned i, bad = 0;
    size_t max_bc = c->attr.cap.am.max_bcopy;
    struct cmd_args r;

    for (i = 0; i < RETAIN; i++) {
        size_t len   = min_sz(8 + 97 * (i + 1), max_bc);
        uint32_t tag = new_tag(c);
        uint8_t *msg = malloc(len);
        make_msg(tag, msg, len);
        if (post_am_bcopy(c, c->ep, AM_RETAIN_ID, msg, len) != (ssize_t)len) {
            bad++;
        } else {
            plan_add(&plan, AM_RETAIN_ID, tag, (uint32_t)len, "retained");
        }
        free(msg);
    }
    /* then enough AMs to cycle every receive buffer several times */
    for (i = 0; i < filler; i++) {
        size_t len   = min_sz(filler_len, max_bc);
        uint32_t tag = new_tag(c);
        uint8_t *msg = malloc(len);
        make_msg(tag, msg, len);
        if (post_am_bcopy(c, c->ep, AM_BCOPY_ID, msg, len) != (ssize_t)len) {
            bad++;
        } else {
            plan_add(&plan, AM_BCOPY_ID, tag, (uint32_t)len, "filler");
        }
        free(msg);
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    am_report_check(c, &plan, 20, 0, "AM retention: retained and filler AMs arrive");
    r = rpc_args(c, CMD_RETAIN_CHECK, 0, 0, 0, 0);
    snprintf(name, sizeof(name),
             "AM retention: UCS_INPROGRESS keeps the descriptor: data intact after %u more AMs "
             "through a %u-entry receive queue, then uct_iface_release_desc", filler, rxq);
    check(c, bad == 0 && r.a == RETAIN && r.b == RETAIN && r.c == 0, name,
          "%" PRIu64 " retained of %d, %" PRIu64 " intact, %" PRIu64 " without "
          "UCT_CB_PARAM_FLAG_DESC, %u posts failed", r.a, RETAIN, r.b, r.c, bad);
    free(plan.e);
    /* after the release, AMs keep flowing (the buffers came back) */
    plan.e = NULL;
    plan.n = plan.cap = 0;
    for (i = 0; i < 500; i++) {
        uint8_t msg[200];
        uint32_t tag = new_tag(c);
        make_msg(tag, msg, sizeof(msg));
        if (post_am_bcopy(c, c->ep, AM_BCOPY_ID, msg, sizeof(msg)) == (ssize_t)sizeof(msg)) {
            plan_add(&plan, AM_BCOPY_ID, tag, sizeof(msg), "after release");
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    am_report_check(c, &plan, 20, 0, "AM retention: AMs keep arriving after the release");
    free(plan.e);
}

/* ========================================================== event waits */

static void test_events(struct ctx *c)
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
            double deadline = now_s() + c->wait_s;
            int armed_now = 0, woke_now = 0;
            uct_iov_t iov;
            struct comp cp;
            comp_init(&cp);
            fill_pat(tag, src, plen, 0);
            make_iov(c, &iov, 1, src, plen);
            progress_for(c, 10); /* nothing left over in the CQs */
            st = POST(c, uct_ep_put_zcopy(c->ep, &iov, 1, c->peer_base + off,
                                          c->peer_rkey.rkey, &cp.uc));
            while (st == UCS_INPROGRESS && cp.calls == 0 && now_s() < deadline) {
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
        t0 = now_s();
        {
            uint32_t type;
            size_t len;
            free(msg_recv(c, &type, &len)); /* the target's "will send" */
        }
        while (armed && c->log_count == before && now_s() - t0 < 10) {
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
                waited = now_s() - t0;
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

/* ========================================================= flow control */

static void test_fc(struct ctx *c)
{
    const char *wnd_env = getenv("UCX_RC_FC_WND_SIZE");
    unsigned wnd = wnd_env ? (unsigned)strtoul(wnd_env, NULL, 0) : 0;
    unsigned n   = (wnd ? wnd : 8) * 250, i, failed_posts = 0;
    struct am_plan plan = { 0 };
    char name[160];

    for (i = 0; i < n; i++) {
        uint8_t msg[64];
        size_t len   = 8 + (i * 7) % 56;
        uint32_t tag = new_tag(c);
        ucs_status_t st;
        make_msg(tag, msg, len);
        if (i % 2 == 0) {
            st = post_am_short(c, c->ep, AM_SHORT_ID, msg, len);
        } else {
            st = post_am_bcopy(c, c->ep, AM_BCOPY_ID, msg, len) == (ssize_t)len ? UCS_OK
                                                                                : UCS_ERR_IO_ERROR;
        }
        if (st == UCS_OK) {
            plan_add(&plan, i % 2 ? AM_BCOPY_ID : AM_SHORT_ID, tag, (uint32_t)len, "fc");
        } else {
            failed_posts++;
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    snprintf(name, sizeof(name),
             "flow control: %u AMs, %ux UCX_RC_FC_WND_SIZE=%s, to a receiver that keeps up", n,
             n / (wnd ? wnd : 8), wnd_env ? wnd_env : "(unset)");
    if (failed_posts) {
        check(c, 0, name, "%u posts failed", failed_posts);
    }
    am_report_check(c, &plan, 20, 0, name);
    free(plan.e);

    /* a receiver that stops progressing for a while, then resumes */
    plan.e = NULL;
    plan.n = plan.cap = 0;
    {
        struct cmd_args args = { 300, 0, 0, 0 };
        unsigned m           = (wnd ? wnd : 8) * 16;
        msg_send(c, CMD_PAUSE, &args, sizeof(args));
        for (i = 0; i < m; i++) {
            uint8_t msg[40];
            uint32_t tag = new_tag(c);
            make_msg(tag, msg, sizeof(msg));
            if (post_am_short(c, c->ep, AM_SHORT_ID, msg, sizeof(msg)) == UCS_OK) {
                plan_add(&plan, AM_SHORT_ID, tag, sizeof(msg), "fc paused");
            }
        }
        flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        {
            uint32_t type;
            size_t len;
            free(msg_recv(c, &type, &len)); /* the pause is over */
        }
        snprintf(name, sizeof(name),
                 "flow control: %u AMs to a receiver that paused 300 ms, all arrive once, in order",
                 m);
        am_report_check(c, &plan, 20, 0, name);
        free(plan.e);
    }
}

/* ========================================================== zero length */

/* Every op with nothing to move (UCX allows length 0 / iovcnt 0): accepted,
 * completed, no byte written; the AM ops deliver an empty AM. */
static void test_empty(struct ctx *c)
{
    size_t off    = talloc(c, 0);
    uint64_t raddr = c->peer_base + off, rkey = c->peer_rkey.rkey;
    uint8_t *buf  = lalloc(c, 64);
    struct pack_arg empty = { buf, 0 };
    struct unpack_arg ua  = { buf, 0, 0 };
    struct am_plan plan   = { 0 };
    struct comp cp;
    ucs_status_t st;
    ssize_t n;
    char why[256] = "";

#define EMPTY_CHECK(label, post, with_comp) \
    do { \
        comp_init(&cp); \
        st = POST(c, post); \
        if ((with_comp) && st == UCS_INPROGRESS) { \
            wait_calls(c, &cp.calls, 1, c->wait_s); \
        } \
        progress_for(c, 1); \
        if (st != UCS_OK && st != UCS_INPROGRESS) { \
            check(c, 0, "zero length: " label, "returned %s", ucs_status_string(st)); \
        } else if ((with_comp) && !comp_ok(&cp, st, why, sizeof(why))) { \
            check(c, 0, "zero length: " label, "%s", why); \
        } else { \
            check(c, 1, "zero length: " label, "%s", ucs_status_string(st)); \
        } \
    } while (0)

    EMPTY_CHECK("put_short", uct_ep_put_short(c->ep, buf, 0, raddr, rkey), 0);
    EMPTY_CHECK("put_zcopy, iovcnt 0", uct_ep_put_zcopy(c->ep, NULL, 0, raddr, rkey, &cp.uc), 1);
    EMPTY_CHECK("get_bcopy", uct_ep_get_bcopy(c->ep, unpack_cb, &ua, 0, raddr, rkey, &cp.uc), 1);
    EMPTY_CHECK("get_zcopy, iovcnt 0", uct_ep_get_zcopy(c->ep, NULL, 0, raddr, rkey, &cp.uc), 1);
    if (c->attr.cap.flags & UCT_IFACE_FLAG_GET_SHORT) {
        EMPTY_CHECK("get_short", uct_ep_get_short(c->ep, buf, 0, raddr, rkey), 0);
    }
    n = uct_ep_put_bcopy(c->ep, pack_cb, &empty, raddr, rkey);
    check(c, n == 0, "zero length: put_bcopy packing 0 bytes", "returned %zd", n);
    EMPTY_CHECK("am_short_iov, iovcnt 0", uct_ep_am_short_iov(c->ep, AM_IOV_ID, NULL, 0), 0);
    if (st == UCS_OK) {
        plan_add(&plan, AM_IOV_ID, 0, 0, "empty am_short_iov");
    }
    n = post_am_bcopy(c, c->ep, AM_BCOPY_ID, buf, 0);
    check(c, n == 0, "zero length: am_bcopy packing 0 bytes", "returned %zd", n);
    if (n == 0) {
        plan_add(&plan, AM_BCOPY_ID, 0, 0, "empty am_bcopy");
    }
    EMPTY_CHECK("am_zcopy, no header, iovcnt 0",
                uct_ep_am_zcopy(c->ep, AM_ZCOPY_ID, NULL, 0, NULL, 0, 0, &cp.uc), 1);
    if (st == UCS_OK || st == UCS_INPROGRESS) {
        plan_add(&plan, AM_ZCOPY_ID, 0, 0, "empty am_zcopy");
    }
#undef EMPTY_CHECK
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    check(c, target_mem_is(c, off, 0, BG_TAG, GUARD, why, sizeof(why)),
          "zero length: the target's bytes at the remote address are untouched", "%s", why);
    am_report_check(c, &plan, 20, 0, "zero length: the empty AMs arrive once, in order, empty");
    free(plan.e);
}

/* ============================================================ bad input */

static void test_bad_input(struct ctx *c)
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

/* ====================================================== both directions */

static void test_reverse(struct ctx *c)
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
        double deadline = now_s() + c->wait_s;
        unsigned idle   = 0;
        while (c->log_count < N && now_s() < deadline) {
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
    double deadline = now_s() + c->wait_s;
    unsigned idle   = 0;
    while (c->log_count < a->a && now_s() < deadline) {
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
    deadline = now_s() + 20;
    while (c->log_count - start < a->a && now_s() < deadline) {
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
static void test_caps(struct ctx *c)
{
    static const struct {
        uint64_t flag;
        const char *name;
    } caps[] = {
        { UCT_IFACE_FLAG_AM_SHORT, "AM_SHORT" },   { UCT_IFACE_FLAG_AM_BCOPY, "AM_BCOPY" },
        { UCT_IFACE_FLAG_AM_ZCOPY, "AM_ZCOPY" },   { UCT_IFACE_FLAG_PUT_SHORT, "PUT_SHORT" },
        { UCT_IFACE_FLAG_PUT_BCOPY, "PUT_BCOPY" }, { UCT_IFACE_FLAG_PUT_ZCOPY, "PUT_ZCOPY" },
        { UCT_IFACE_FLAG_GET_BCOPY, "GET_BCOPY" },
        { UCT_IFACE_FLAG_GET_ZCOPY, "GET_ZCOPY" }, { UCT_IFACE_FLAG_PENDING, "PENDING" },
        { UCT_IFACE_FLAG_CONNECT_TO_EP, "CONNECT_TO_EP" }, { UCT_IFACE_FLAG_CB_SYNC, "CB_SYNC" },
    };
    char missing[256] = "";
    unsigned i;
    for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        if (!(c->attr.cap.flags & caps[i].flag)) {
            strncat(missing, " ", sizeof(missing) - strlen(missing) - 1);
            strncat(missing, caps[i].name, sizeof(missing) - strlen(missing) - 1);
        }
    }
    /* GET_SHORT has its own check (get_short) */
    check(c, missing[0] == '\0', "iface advertises every op of the suite", "%s%s",
          missing[0] ? "missing:" : "", missing);
}

static int run_initiator(struct ctx *c)
{
    struct cmd_args st;
    double t0 = now_s();
    static const struct {
        void (*run)(struct ctx *);
        const char *name;
    } groups[] = {
        { test_caps, "caps" },         { test_reverse, "reverse" },
        { test_put, "put" },           { test_get, "get" },
        { test_am, "am" },             { test_atomics, "atomics" },
        { test_ordering, "ordering" }, { test_pending, "pending" },
        { test_flush, "flush" },       { test_fence, "fence" },
        { test_retention, "retention" }, { test_events, "events" },
        { test_fc, "flow control" },   { test_empty, "zero length" },
        { test_bad_input, "bad input" },
        { test_remote_error, "remote error" }, { test_cancel, "cancel" },
        { test_destroyed_ep, "destroyed ep" },
    };
    unsigned g;
    print_limits(c);
    for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        double t = now_s();
        groups[g].run(c);
        printf("# %s: %.2f s\n", groups[g].name, now_s() - t);
    }

    st = rpc_args(c, CMD_STATS, 0, 0, 0, 0);
    check(c, st.a == 0 && c->err_calls == 0 && st.c == 0,
          "no error handler call on the main endpoints",
          "initiator %u (%s), target %" PRIu64 " (%s), target log overflow %" PRIu64,
          c->err_calls, ucs_status_string(c->err_calls ? c->err_status : UCS_OK), st.a,
          ucs_status_string((ucs_status_t)(int64_t)st.b), st.c);
    free(rpc(c, CMD_QUIT, NULL, 0, NULL));
    printf("SUMMARY: %u passed, %u failed (%.1f s)\n", c->passed, c->failed, now_s() - t0);
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
    fprintf(out, "usage: rc_ops [-d DEVICE] [-t SECONDS]\n"
                 "  -d DEVICE   rc_mlx5 device (default mlx5_0:1)\n"
                 "  -t SECONDS  watchdog: fail the run after this long (default 600)\n"
                 "Every rc_mlx5 operation between two forked processes, checked at the target.\n"
                 "Exit status 0 only if every check passed.\n");
}

int main(int argc, char **argv)
{
    const char *dev    = "mlx5_0:1";
    unsigned timeout_s = 600;
    int fds[2], opt, status, rc_i = 1, rc_t = 1;
    pid_t target, initiator, pid;

    while ((opt = getopt(argc, argv, "d:t:h")) != -1) {
        switch (opt) {
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
