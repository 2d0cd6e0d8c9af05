/*
 * failover_demo: two processes, two rails, one cable pulled mid-stream, and
 * nothing lost or applied twice.
 *
 * A sender and a receiver (forked from this program, or started separately
 * with --role and a Unix socket path for the bootstrap) open rc_mlx5 on two
 * soft HCA devices each (rail 0 = mlx5_0, rail 1 = mlx5_1) and connect one
 * endpoint per rail. The bootstrap socket carries only what a real job
 * launcher would carry: addresses, and (for a receiver-side cut) the moment
 * to pull the cable. Everything else goes over UCT.
 *
 * The sender enables failover on its rail-0 endpoint and posts a seeded,
 * mixed stream of operations (AM short/bcopy with sequence numbers, put
 * short/zcopy into the receiver's memory, get zcopy, 64-bit fetch-add on a
 * counter). At op K rail 0 is cut (uct_soft_hca_link_set, or --cut-cmd).
 * When the error handler reports the rail-0 endpoint, the sender queries its
 * TX token, sends it to the receiver over rail 1 (an AM), the receiver turns
 * it into an RX token (uct_iface_query_v2 on its rail-0 iface) and sends that
 * back over rail 1, the sender purges the rail-0 endpoint and replays every
 * reported operation on rail 1, in order, from the op info it was given.
 * The rest of the stream then goes over rail 1.
 *
 * Both sides know the whole stream (it is generated from --seed), so the
 * receiver checks every AM sequence number arrived exactly once with its
 * bytes, every put's bytes, untouched memory elsewhere and the exact counter;
 * the sender checks every get's data, every fetch-add result and that every
 * completion ran once. Exit status 0 only for lost 0 and duplicated 0.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <uct/soft/soft_hca.h>

#include "oob.h" /* clock, mixer, whole-buffer send, bounded wait */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RAILS 2
#define SLOT_SIZE 1024          /* bytes of put/get target per op */
#define GET_REGION_SIZE 65536   /* receiver bytes the gets read */
#define MAX_OPS 20000
#define MAX_TOKEN 256
#define MAX_BOOT_MSG 4096
#define DEFAULT_DEVICES "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2"

/* AM ids */
enum {
    AM_SEQ_SHORT   = 1,  /* stream: short AM, header = sequence number */
    AM_SEQ_BCOPY   = 2,  /* stream: bcopy AM, first 8 bytes = sequence number */
    AM_TOKEN_REQ   = 3,  /* rail 1, sender -> receiver: a TX token */
    AM_TOKEN_REPLY = 4,  /* rail 1, receiver -> sender: status + RX token */
    AM_DONE        = 5,  /* rail 1, sender -> receiver: stream over + sender stats */
    AM_VERDICT     = 6   /* rail 1, receiver -> sender: receiver's findings */
};

/* bootstrap message types (one SOCK_SEQPACKET datagram each) */
enum { BOOT_ADDRESS = 'A', BOOT_CUT = 'C', BOOT_CUT_DONE = 'c', BOOT_ABORT = 'X', BOOT_BYE = 'B' };

enum op_kind { OP_AM_SHORT, OP_AM_BCOPY, OP_PUT_SHORT, OP_PUT_ZCOPY, OP_GET_ZCOPY, OP_FADD, OP_KINDS };
static const char *const op_kind_names[OP_KINDS] = {
    "am_short", "am_bcopy", "put_short", "put_zcopy", "get_zcopy", "fetch_add"
};

enum role { ROLE_SENDER, ROLE_RECEIVER };
enum cut_side { CUT_SENDER = 1, CUT_RECEIVER = 2, CUT_BOTH = 3 };

/* The two ways a caller keeps a failed ep's outstanding ops for purge. */
enum {
    HOLD_ENABLE,  /* uct_ep_failover_enable before posting (PR 11582/11810) */
    HOLD_HANDLER  /* the iface error handler answers UCS_INPROGRESS (UCX master) */
};

struct options {
    unsigned ops;
    uint64_t seed;
    long cut_at;          /* -1: no cut */
    int cut_side;
    double loss;
    int quiet;
    unsigned timeout_s;
    int role;             /* -1: fork both */
    const char *bootstrap;
    const char *cut_cmd;
    const char *rail_md[RAILS];
    int hold;             /* how the sender's rail-0 ep keeps its ops: HOLD_* */
};

struct plan_op {
    uint8_t kind;
    uint32_t length;       /* payload bytes (AM: after the sequence number) */
    uint32_t get_offset;   /* gets: where in the receiver's get region */
    uint64_t add;          /* fetch-add operand */
    uint64_t expect;       /* fetch-add: the counter value it must fetch */
};

/* A completion per op that takes one; `calls` counts callbacks. */
struct op_comp {
    uct_completion_t comp;
    uint32_t seq;
    int calls;
    int immediate;          /* the post itself returned UCS_OK */
    ucs_status_t status;
};

struct rail {
    const char *md_name;
    char dev_name[64];
    uct_component_h component;
    uct_md_h md;
    uct_iface_h iface;
    uct_ep_h ep;
    uct_iface_attr_t attr;
    size_t rkey_packed_size;
    uct_mem_h memh;         /* the side's registered region on this md */
    uct_rkey_bundle_t peer_rkey;
    int have_peer_rkey;
    volatile int failed;
    ucs_status_t fail_status;
};

struct sender_stats {
    uint64_t posted, posted_rail0, delivered_before_cut, replayed, fetch_result_lost;
    uint64_t lost, duplicated, bad;
    uint64_t cut_to_last_replay_us;
    int cut_done;
};

struct receiver_stats {
    uint64_t am_rail[RAILS];
    uint64_t lost, duplicated, bad;
    uint64_t counter, counter_expect;
};

struct side {
    int role;
    const char *name;
    struct options *opt;
    struct plan_op *plan;
    unsigned n;
    ucs_async_context_t *async;
    uct_worker_h worker;
    struct rail rail[RAILS];
    int boot_fd;
    unsigned pump_tick;

    /* registered memory: receiver = puts | gets | counter,
     * sender = put sources | get destinations | fetch results */
    uint8_t *region;
    size_t region_len;
    uint64_t peer_base;     /* the receiver's region address (sender) */

    /* sender */
    struct op_comp *comps;
    uint32_t *replay_queue;
    size_t replay_queued;
    int64_t last_reported;
    uint8_t *reported;
    int token_reply_ready;
    ucs_status_t token_reply_status;
    uint8_t rx_token[MAX_TOKEN];
    size_t rx_token_len;
    int verdict_ready;
    struct receiver_stats verdict;
    int cut_ack;
    struct sender_stats st;
    struct timespec t_cut;

    /* receiver */
    uint32_t *am_count;
    int token_req_ready;
    uint8_t tx_token[MAX_TOKEN];
    size_t tx_token_len;
    int done_ready;
    struct sender_stats done;   /* the sender's stats, from its DONE message */
    uint64_t am_bad;            /* AMs that matched no op of the stream */
    int bye;
};

/* ------------------------------------------------------------------ util */

static void say(struct side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct side *s, const char *fmt, ...)
{
    va_list ap;
    if (s->opt->quiet) {
        return;
    }
    va_start(ap, fmt);
    printf("[%s] ", s->name);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

static void boot_send(struct side *s, int type, const void *data, size_t len);

static void die(struct side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(struct side *s, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "failover_demo [%s]: ", s ? s->name : "main");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    if (s != NULL && s->boot_fd >= 0) {
        char type = BOOT_ABORT;
        /* best effort: tell the peer so that it stops waiting now */
        (void)send(s->boot_fd, &type, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    exit(1);
}

static void on_alarm(int sig)
{
    static const char msg[] = "failover_demo: timed out (a peer hung or a wait never ended); "
                              "raise --timeout if the machine is just slow\n";
    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(124);
}

static uint64_t rng_next(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return oob_mix64(*state);
}

/* The byte `j` of op `seq`'s payload; both sides compute it. */
static uint8_t pattern_byte(uint64_t seed, uint64_t seq, size_t j)
{
    uint64_t h = oob_mix64(seed * 0x100000001b3ull ^ (seq + 1) * 0xff51afd7ed558ccdull ^ (j / 8));
    return (uint8_t)(h >> (8 * (j % 8)));
}

static void fill_pattern(uint64_t seed, uint64_t seq, uint8_t *dst, size_t len)
{
    size_t j;
    for (j = 0; j < len; j++) {
        dst[j] = pattern_byte(seed, seq, j);
    }
}

static int check_pattern(uint64_t seed, uint64_t seq, const uint8_t *src, size_t len)
{
    size_t j;
    for (j = 0; j < len; j++) {
        if (src[j] != pattern_byte(seed, seq, j)) {
            return 0;
        }
    }
    return 1;
}

#define GET_REGION_SEQ UINT64_C(0xffffffffff)

/* -------------------------------------------------------------- the plan */

static void make_plan(struct side *s)
{
    const uct_iface_attr_t *a0 = &s->rail[0].attr, *a1 = &s->rail[1].attr;
    size_t am_short_max  = a0->cap.am.max_short < a1->cap.am.max_short ? a0->cap.am.max_short
                                                                         : a1->cap.am.max_short;
    size_t am_bcopy_max  = a0->cap.am.max_bcopy < a1->cap.am.max_bcopy ? a0->cap.am.max_bcopy
                                                                         : a1->cap.am.max_bcopy;
    size_t put_short_max = a0->cap.put.max_short < a1->cap.put.max_short ? a0->cap.put.max_short
                                                                           : a1->cap.put.max_short;
    size_t zcopy_max     = a0->cap.put.max_zcopy < a0->cap.get.max_zcopy ? a0->cap.put.max_zcopy
                                                                           : a0->cap.get.max_zcopy;
    uint64_t rng = s->opt->seed, counter = 0;
    unsigned i;

    if (am_short_max < 16 || am_bcopy_max < 16 || put_short_max < 8 || zcopy_max < 64) {
        die(s, "the interface limits are too small for the demo (am short %zu, am bcopy %zu, "
               "put short %zu, zcopy %zu)", am_short_max, am_bcopy_max, put_short_max, zcopy_max);
    }
    am_short_max  = (am_short_max - 8) > 56 ? 56 : am_short_max - 8;
    am_bcopy_max  = (am_bcopy_max - 8) > 1016 ? 1016 : am_bcopy_max - 8;
    put_short_max = put_short_max > 64 ? 64 : put_short_max;
    zcopy_max     = zcopy_max > SLOT_SIZE ? SLOT_SIZE : zcopy_max;

    s->plan = calloc(s->n, sizeof(*s->plan));
    if (s->plan == NULL) {
        die(s, "out of memory");
    }
    for (i = 0; i < s->n; i++) {
        struct plan_op *op = &s->plan[i];
        uint64_t r         = rng_next(&rng);
        op->kind           = (uint8_t)(r % OP_KINDS);
        r                  = rng_next(&rng);
        switch (op->kind) {
        case OP_AM_SHORT:
            op->length = (uint32_t)(r % (am_short_max + 1));
            break;
        case OP_AM_BCOPY:
            op->length = (uint32_t)(8 + r % (am_bcopy_max - 7));
            break;
        case OP_PUT_SHORT:
            op->length = (uint32_t)(1 + r % put_short_max);
            break;
        case OP_PUT_ZCOPY:
            op->length = (uint32_t)(1 + r % zcopy_max);
            break;
        case OP_GET_ZCOPY:
            op->length     = (uint32_t)(1 + r % zcopy_max);
            op->get_offset = (uint32_t)(rng_next(&rng) % (GET_REGION_SIZE - op->length + 1));
            break;
        case OP_FADD:
            op->length = 8;
            op->add    = 1 + r % 1000;
            op->expect = counter;
            counter += op->add;
            break;
        }
    }
}

static uint64_t plan_counter_total(const struct side *s)
{
    uint64_t total = 0;
    unsigned i;
    for (i = 0; i < s->n; i++) {
        if (s->plan[i].kind == OP_FADD) {
            total += s->plan[i].add;
        }
    }
    return total;
}

/* Region layouts. */
static size_t recv_put_off(unsigned seq) { return (size_t)seq * SLOT_SIZE; }
static size_t recv_get_off(const struct side *s) { return (size_t)s->n * SLOT_SIZE; }
static size_t recv_counter_off(const struct side *s) { return recv_get_off(s) + GET_REGION_SIZE; }
static size_t recv_region_len(const struct side *s) { return recv_counter_off(s) + 64; }
static size_t send_src_off(unsigned seq) { return (size_t)seq * SLOT_SIZE; }
static size_t send_dst_off(const struct side *s, unsigned seq) { return ((size_t)s->n + seq) * SLOT_SIZE; }
static size_t send_result_off(const struct side *s, unsigned seq) { return (size_t)s->n * 2 * SLOT_SIZE + (size_t)seq * 8; }
static size_t send_region_len(const struct side *s) { return send_result_off(s, s->n) + 64; }

/* ------------------------------------------------------------ bootstrap */

static void boot_send(struct side *s, int type, const void *data, size_t len)
{
    uint8_t msg[MAX_BOOT_MSG];
    int rc;
    if (len + 1 > sizeof(msg)) {
        die(s, "bootstrap message too long (%zu bytes)", len);
    }
    msg[0] = (uint8_t)type;
    if (len > 0) {
        memcpy(msg + 1, data, len);
    }
    /* one SOCK_SEQPACKET send carries the whole message or fails */
    rc = oob_write_full(s->boot_fd, msg, len + 1);
    if (rc != 0) {
        s->boot_fd = -1; /* no abort message through a broken socket */
        die(s, "bootstrap send: %s (the peer is gone)", strerror(-rc));
    }
}

static void handle_boot_message(struct side *s, const uint8_t *msg, size_t len);

/* Waits up to `timeout_ms` (-1: the process alarm bounds it) for one
 * bootstrap message; returns its length, 0 if none arrived. */
static size_t boot_recv(struct side *s, uint8_t *msg, size_t cap, int timeout_ms)
{
    ssize_t n;
    if (oob_wait_readable(s->boot_fd, timeout_ms) <= 0) {
        return 0;
    }
    n = recv(s->boot_fd, msg, cap, 0);
    if (n == 0 && s->bye) {
        return 0; /* the sender said goodbye and left: an orderly end */
    }
    if (n <= 0) {
        s->boot_fd = -1;
        die(s, "the peer closed the bootstrap socket (it exited or crashed)");
    }
    if (msg[0] == BOOT_ABORT) {
        s->boot_fd = -1;
        die(s, "the peer aborted");
    }
    return (size_t)n;
}

/* Handles bootstrap messages that may come at any time, without blocking. */
static void pump_bootstrap(struct side *s)
{
    uint8_t msg[MAX_BOOT_MSG];
    size_t n;
    while ((n = boot_recv(s, msg, sizeof(msg), 0)) > 0) {
        handle_boot_message(s, msg, n);
    }
}

static unsigned progress(struct side *s)
{
    unsigned count = uct_worker_progress(s->worker);
    if ((++s->pump_tick & 255) == 0) {
        pump_bootstrap(s);
    }
    if (count == 0) {
        sched_yield();
    }
    return count;
}

/* --------------------------------------------------------------- the cut */

static void cut_rail0_here(struct side *s)
{
    ucs_status_t status;
    if (s->opt->cut_cmd != NULL) {
        int rc = system(s->opt->cut_cmd);
        if (rc != 0) {
            die(s, "cut command '%s' failed (status %d)", s->opt->cut_cmd, rc);
        }
        say(s, "rail 0 cut: '%s'", s->opt->cut_cmd);
        return;
    }
    status = uct_soft_hca_link_set(s->rail[0].md_name, 0);
    if (status != UCS_OK) {
        die(s, "uct_soft_hca_link_set(%s, 0): %s", s->rail[0].md_name, ucs_status_string(status));
    }
    say(s, "rail 0 cut: %s link down", s->rail[0].md_name);
}

static void handle_boot_message(struct side *s, const uint8_t *msg, size_t len)
{
    (void)len;
    switch (msg[0]) {
    case BOOT_CUT:
        cut_rail0_here(s);
        boot_send(s, BOOT_CUT_DONE, NULL, 0);
        break;
    case BOOT_CUT_DONE:
        s->cut_ack = 1;
        break;
    case BOOT_BYE:
        s->bye = 1;
        break;
    default:
        die(s, "unexpected bootstrap message '%c'", msg[0]);
    }
}

/* ------------------------------------------------------------- AM plumbing */

struct pack_bytes {
    const void *data;
    size_t length;
};

static size_t pack_bytes_cb(void *dest, void *arg)
{
    const struct pack_bytes *p = arg;
    memcpy(dest, p->data, p->length);
    return p->length;
}

/* Sends a control AM on rail 1, waiting out a full send queue. */
static void send_ctl(struct side *s, uint8_t id, const void *data, size_t len)
{
    struct pack_bytes p = { data, len };
    double deadline     = oob_now_s() + s->opt->timeout_s;
    ssize_t n;
    for (;;) {
        n = uct_ep_am_bcopy(s->rail[1].ep, id, pack_bytes_cb, &p, 0);
        if (n >= 0) {
            return;
        }
        if (n != UCS_ERR_NO_RESOURCE) {
            die(s, "control AM %u on rail 1: %s", id, ucs_status_string((ucs_status_t)n));
        }
        if (oob_now_s() > deadline) {
            die(s, "rail 1 send queue never drained");
        }
        progress(s);
    }
}

static void flush_ep(struct side *s, int r)
{
    double deadline = oob_now_s() + s->opt->timeout_s;
    ucs_status_t status;
    for (;;) {
        status = uct_ep_flush(s->rail[r].ep, 0, NULL);
        if (status == UCS_OK) {
            return;
        }
        if (status != UCS_INPROGRESS && status != UCS_ERR_NO_RESOURCE) {
            die(s, "flush of rail %d: %s", r, ucs_status_string(status));
        }
        if (oob_now_s() > deadline) {
            die(s, "flush of rail %d did not finish", r);
        }
        progress(s);
    }
}

/* Receiver: the stream's AMs, on either rail (arg = rail index). */
static ucs_status_t stream_am_cb(struct side *s, int rail, int short_am, const uint8_t *data,
                                 size_t length)
{
    uint64_t seq;
    const struct plan_op *op;
    if (length < 8) {
        s->am_bad++;
        return UCS_OK;
    }
    memcpy(&seq, data, 8);
    if (seq >= s->n) {
        fprintf(stderr, "[receiver] AM with sequence number %" PRIu64 " beyond the stream\n", seq);
        s->am_bad++;
        return UCS_OK;
    }
    op = &s->plan[seq];
    if (op->kind != (short_am ? OP_AM_SHORT : OP_AM_BCOPY) || length != 8 + op->length ||
        !check_pattern(s->opt->seed, seq, data + 8, op->length)) {
        fprintf(stderr, "[receiver] AM %" PRIu64 " (%s) arrived with wrong kind, length or bytes\n",
                seq, op_kind_names[op->kind]);
        s->am_bad++;
        return UCS_OK;
    }
    s->am_count[seq]++;
    s->verdict.am_rail[rail]++;
    return UCS_OK;
}

static ucs_status_t am_short_rail0(void *arg, void *data, size_t length, unsigned flags)
{
    (void)flags;
    return stream_am_cb(arg, 0, 1, data, length);
}
static ucs_status_t am_short_rail1(void *arg, void *data, size_t length, unsigned flags)
{
    (void)flags;
    return stream_am_cb(arg, 1, 1, data, length);
}
static ucs_status_t am_bcopy_rail0(void *arg, void *data, size_t length, unsigned flags)
{
    (void)flags;
    return stream_am_cb(arg, 0, 0, data, length);
}
static ucs_status_t am_bcopy_rail1(void *arg, void *data, size_t length, unsigned flags)
{
    (void)flags;
    return stream_am_cb(arg, 1, 0, data, length);
}

static ucs_status_t am_token_req_cb(void *arg, void *data, size_t length, unsigned flags)
{
    struct side *s = arg;
    (void)flags;
    if (length > MAX_TOKEN) {
        length = 0; /* answered with an error below */
    }
    memcpy(s->tx_token, data, length);
    s->tx_token_len    = length;
    s->token_req_ready = 1;
    return UCS_OK;
}

static ucs_status_t am_token_reply_cb(void *arg, void *data, size_t length, unsigned flags)
{
    struct side *s = arg;
    int8_t status;
    (void)flags;
    if (length < 1 || length - 1 > MAX_TOKEN) {
        s->token_reply_status = UCS_ERR_INVALID_PARAM;
    } else {
        memcpy(&status, data, 1);
        s->token_reply_status = (ucs_status_t)status;
        s->rx_token_len       = length - 1;
        memcpy(s->rx_token, (uint8_t *)data + 1, length - 1);
    }
    s->token_reply_ready = 1;
    return UCS_OK;
}

static ucs_status_t am_done_cb(void *arg, void *data, size_t length, unsigned flags)
{
    struct side *s = arg;
    (void)flags;
    if (length == sizeof(s->done)) {
        memcpy(&s->done, data, sizeof(s->done));
    } else {
        memset(&s->done, 0, sizeof(s->done));
        s->am_bad++;
    }
    s->done_ready = 1;
    return UCS_OK;
}

static ucs_status_t am_verdict_cb(void *arg, void *data, size_t length, unsigned flags)
{
    struct side *s = arg;
    (void)flags;
    if (length == sizeof(s->verdict)) {
        memcpy(&s->verdict, data, sizeof(s->verdict));
    } else {
        memset(&s->verdict, 0, sizeof(s->verdict));
        s->verdict.bad = 1;
    }
    s->verdict_ready = 1;
    return UCS_OK;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    struct side *s = arg;
    int r;
    for (r = 0; r < RAILS; r++) {
        if (s->rail[r].ep == ep) {
            if (!s->rail[r].failed) {
                s->rail[r].failed      = 1;
                s->rail[r].fail_status = status;
            }
            /* Held for purge: the sender replays what rail 0 did not deliver. */
            if (s->role == ROLE_SENDER && r == 0 && s->opt->hold == HOLD_HANDLER) {
                return UCS_INPROGRESS;
            }
            return UCS_OK;
        }
    }
    fprintf(stderr, "[%s] error handler for an unknown ep %p: %s\n", s->name, (void *)ep,
            ucs_status_string(status));
    return UCS_OK;
}

/* ------------------------------------------------------------- open/close */

static void find_component(struct side *s, struct rail *rl)
{
    uct_component_h *components;
    unsigned count, i, j;
    ucs_status_t status = uct_query_components(&components, &count);
    if (status != UCS_OK) {
        die(s, "uct_query_components: %s", ucs_status_string(status));
    }
    rl->component = NULL;
    for (i = 0; i < count && rl->component == NULL; i++) {
        uct_component_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK || attr.md_resource_count == 0) {
            continue;
        }
        attr.md_resources = calloc(attr.md_resource_count, sizeof(*attr.md_resources));
        if (attr.md_resources == NULL) {
            die(s, "out of memory");
        }
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if (uct_component_query(components[i], &attr) == UCS_OK) {
            for (j = 0; j < attr.md_resource_count; j++) {
                if (strcmp(attr.md_resources[j].md_name, rl->md_name) == 0) {
                    rl->component = components[i];
                }
            }
        }
        free(attr.md_resources);
    }
    uct_release_component_list(components);
    if (rl->component == NULL) {
        die(s, "no memory domain '%s' (UCX_SOFT_HCA_DEVICES=%s)", rl->md_name,
            getenv("UCX_SOFT_HCA_DEVICES") ? getenv("UCX_SOFT_HCA_DEVICES") : "(unset)");
    }
}

/* Rail 1's ACK timeout: UCX's default order, not rail 0's 10 ms. */
#define RAIL1_RC_TIMEOUT "1s"

static void open_rail(struct side *s, int r)
{
    struct rail *rl = &s->rail[r];
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_md_attr_t md_attr;
    uct_ep_params_t ep_params;
    ucs_status_t status;

    find_component(s, rl);
    status = uct_md_open(rl->component, rl->md_name, NULL, &rl->md);
    if (status != UCS_OK) {
        die(s, "uct_md_open(%s): %s", rl->md_name, ucs_status_string(status));
    }
    status = uct_md_query(rl->md, &md_attr);
    if (status != UCS_OK) {
        die(s, "uct_md_query(%s): %s", rl->md_name, ucs_status_string(status));
    }
    rl->rkey_packed_size = md_attr.rkey_packed_size;
    snprintf(rl->dev_name, sizeof(rl->dev_name), "%s:1", rl->md_name);

    status = uct_md_iface_config_read(rl->md, "rc_mlx5", NULL, NULL, &config);
    if (status != UCS_OK) {
        die(s, "uct_md_iface_config_read(%s): %s", rl->md_name, ucs_status_string(status));
    }
    if (r == 1) {
        /* Only rail 0's cut is to be noticed fast. Rail 1 carries the replay
         * and the rest of the stream: with rail 0's 10 ms (x 8 attempts) a
         * peer stalled ~80 ms by a loaded machine would fail it too, and
         * with it the run. */
        status = uct_config_modify(config, "RC_TIMEOUT", RAIL1_RC_TIMEOUT);
        if (status != UCS_OK) {
            die(s, "uct_config_modify(RC_TIMEOUT): %s", ucs_status_string(status));
        }
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_mlx5";
    params.mode.device.dev_name = rl->dev_name;
    params.err_handler          = err_handler;
    params.err_handler_arg      = s;
    params.err_handler_flags    = 0;
    status = uct_iface_open(rl->md, s->worker, &params, config, &rl->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        die(s, "uct_iface_open(rc_mlx5/%s): %s", rl->dev_name, ucs_status_string(status));
    }
    status = uct_iface_query(rl->iface, &rl->attr);
    if (status != UCS_OK) {
        die(s, "uct_iface_query(%s): %s", rl->dev_name, ucs_status_string(status));
    }
    uct_iface_progress_enable(rl->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = rl->iface;
    status = uct_ep_create(&ep_params, &rl->ep);
    if (status != UCS_OK) {
        die(s, "uct_ep_create(%s): %s", rl->dev_name, ucs_status_string(status));
    }
}

static void set_am(struct side *s, int r, uint8_t id, uct_am_callback_t cb)
{
    ucs_status_t status = uct_iface_set_am_handler(s->rail[r].iface, id, cb, s, 0);
    if (status != UCS_OK) {
        die(s, "uct_iface_set_am_handler(rail %d, %u): %s", r, id, ucs_status_string(status));
    }
}

static void register_region(struct side *s)
{
    int r;
    s->region = aligned_alloc(4096, (s->region_len + 4095) & ~(size_t)4095);
    if (s->region == NULL) {
        die(s, "out of memory (%zu bytes)", s->region_len);
    }
    memset(s->region, 0, s->region_len);
    for (r = 0; r < RAILS; r++) {
        ucs_status_t status = uct_md_mem_reg(s->rail[r].md, s->region, s->region_len,
                                             UCT_MD_MEM_ACCESS_ALL, &s->rail[r].memh);
        if (status != UCS_OK) {
            die(s, "uct_md_mem_reg(%s, %zu bytes): %s", s->rail[r].md_name, s->region_len,
                ucs_status_string(status));
        }
    }
}

/* Address blob: per rail [u32 len, device addr][u32 len, ep addr][u32 len, rkey],
 * then the region's address. */
static size_t put_blob(uint8_t *out, size_t at, const void *data, uint32_t len)
{
    memcpy(out + at, &len, 4);
    memcpy(out + at + 4, data, len);
    return at + 4 + len;
}

static const uint8_t *get_blob(struct side *s, const uint8_t **cursor, const uint8_t *end,
                               uint32_t *len)
{
    const uint8_t *data;
    if (end - *cursor < 4) {
        die(s, "truncated peer address");
    }
    memcpy(len, *cursor, 4);
    data = *cursor + 4;
    if ((size_t)(end - data) < *len) {
        die(s, "truncated peer address");
    }
    *cursor = data + *len;
    return data;
}

static void exchange_and_connect(struct side *s)
{
    uint8_t out[MAX_BOOT_MSG], in[MAX_BOOT_MSG], tmp[1024];
    const uint8_t *cursor, *end;
    uint64_t base = (uintptr_t)s->region;
    size_t at     = 0, n;
    int r;

    for (r = 0; r < RAILS; r++) {
        struct rail *rl = &s->rail[r];
        ucs_status_t status;
        if (rl->attr.device_addr_len > sizeof(tmp) || rl->attr.ep_addr_len > sizeof(tmp) ||
            rl->rkey_packed_size > sizeof(tmp)) {
            die(s, "addresses too long");
        }
        status = uct_iface_get_device_address(rl->iface, (uct_device_addr_t *)tmp);
        if (status != UCS_OK) {
            die(s, "uct_iface_get_device_address: %s", ucs_status_string(status));
        }
        at     = put_blob(out, at, tmp, (uint32_t)rl->attr.device_addr_len);
        status = uct_ep_get_address(rl->ep, (uct_ep_addr_t *)tmp);
        if (status != UCS_OK) {
            die(s, "uct_ep_get_address: %s", ucs_status_string(status));
        }
        at     = put_blob(out, at, tmp, (uint32_t)rl->attr.ep_addr_len);
        status = uct_md_mkey_pack(rl->md, rl->memh, tmp);
        if (status != UCS_OK) {
            die(s, "uct_md_mkey_pack: %s", ucs_status_string(status));
        }
        at = put_blob(out, at, tmp, (uint32_t)rl->rkey_packed_size);
    }
    at = put_blob(out, at, &base, 8);
    boot_send(s, BOOT_ADDRESS, out, at);

    n = boot_recv(s, in, sizeof(in), -1);
    if (n == 0 || in[0] != BOOT_ADDRESS) {
        die(s, "expected the peer's address");
    }
    cursor = in + 1;
    end    = in + n;
    for (r = 0; r < RAILS; r++) {
        struct rail *rl = &s->rail[r];
        const uint8_t *dev, *ep, *rkey;
        uint32_t dev_len, ep_len, rkey_len;
        ucs_status_t status;
        dev  = get_blob(s, &cursor, end, &dev_len);
        ep   = get_blob(s, &cursor, end, &ep_len);
        rkey = get_blob(s, &cursor, end, &rkey_len);
        if (dev_len != rl->attr.device_addr_len || ep_len != rl->attr.ep_addr_len) {
            die(s, "peer address lengths differ from ours on rail %d", r);
        }
        status = uct_ep_connect_to_ep(rl->ep, (const uct_device_addr_t *)dev,
                                      (const uct_ep_addr_t *)ep);
        if (status != UCS_OK) {
            die(s, "uct_ep_connect_to_ep(rail %d): %s", r, ucs_status_string(status));
        }
        if (s->role == ROLE_SENDER) {
            status = uct_rkey_unpack(rl->component, rkey, &rl->peer_rkey);
            if (status != UCS_OK) {
                die(s, "uct_rkey_unpack(rail %d): %s", r, ucs_status_string(status));
            }
            rl->have_peer_rkey = 1;
        }
    }
    {
        uint32_t len;
        const uint8_t *b = get_blob(s, &cursor, end, &len);
        if (len != 8) {
            die(s, "bad peer region address");
        }
        memcpy(&s->peer_base, b, 8);
    }
    say(s, "connected: rail 0 %s, rail 1 %s", s->rail[0].dev_name, s->rail[1].dev_name);
}

static void close_side(struct side *s)
{
    int r;
    for (r = RAILS - 1; r >= 0; r--) {
        struct rail *rl = &s->rail[r];
        if (rl->have_peer_rkey) {
            uct_rkey_release(rl->component, &rl->peer_rkey);
        }
        uct_ep_destroy(rl->ep);
        uct_md_mem_dereg(rl->md, rl->memh);
        uct_iface_close(rl->iface);
        uct_md_close(rl->md);
    }
    uct_worker_destroy(s->worker);
    ucs_async_context_destroy(s->async);
    free(s->region);
    free(s->plan);
    free(s->comps);
    free(s->replay_queue);
    free(s->reported);
    free(s->am_count);
}

/* ----------------------------------------------------------------- sender */

static void op_completed(uct_completion_t *self)
{
    struct op_comp *c = (struct op_comp *)self;
    c->calls++;
    c->status = self->status;
}

struct pack_seq {
    struct side *s;
    uint32_t seq;
};

static size_t pack_seq_cb(void *dest, void *arg)
{
    const struct pack_seq *p = arg;
    uint64_t seq             = p->seq;
    size_t len               = p->s->plan[p->seq].length;
    memcpy(dest, &seq, 8);
    fill_pattern(p->s->opt->seed, seq, (uint8_t *)dest + 8, len);
    return 8 + len;
}

/* Posts stream op `seq` on rail `r`, from the plan. */
static ucs_status_t post_op(struct side *s, int r, uint32_t seq)
{
    const struct plan_op *op = &s->plan[seq];
    struct rail *rl          = &s->rail[r];
    struct op_comp *c        = &s->comps[seq];
    uint8_t buf[128];
    uct_iov_t iov;
    ucs_status_t status;

    switch (op->kind) {
    case OP_AM_SHORT:
        fill_pattern(s->opt->seed, seq, buf, op->length);
        return uct_ep_am_short(rl->ep, AM_SEQ_SHORT, seq, buf, op->length);
    case OP_AM_BCOPY: {
        struct pack_seq p = { s, seq };
        ssize_t n         = uct_ep_am_bcopy(rl->ep, AM_SEQ_BCOPY, pack_seq_cb, &p, 0);
        return n < 0 ? (ucs_status_t)n : UCS_OK;
    }
    case OP_PUT_SHORT:
        fill_pattern(s->opt->seed, seq, buf, op->length);
        return uct_ep_put_short(rl->ep, buf, op->length, s->peer_base + recv_put_off(seq),
                                rl->peer_rkey.rkey);
    case OP_PUT_ZCOPY:
    case OP_GET_ZCOPY:
        iov.buffer = s->region + (op->kind == OP_PUT_ZCOPY ? send_src_off(seq)
                                                            : send_dst_off(s, seq));
        iov.length = op->length;
        iov.memh   = rl->memh;
        iov.stride = 0;
        iov.count  = 1;
        status = op->kind == OP_PUT_ZCOPY
                         ? uct_ep_put_zcopy(rl->ep, &iov, 1, s->peer_base + recv_put_off(seq),
                                            rl->peer_rkey.rkey, &c->comp)
                         : uct_ep_get_zcopy(rl->ep, &iov, 1,
                                            s->peer_base + recv_get_off(s) + op->get_offset,
                                            rl->peer_rkey.rkey, &c->comp);
        break;
    case OP_FADD:
        status = uct_ep_atomic64_fetch(rl->ep, UCT_ATOMIC_OP_ADD, op->add,
                                       (uint64_t *)(s->region + send_result_off(s, seq)),
                                       s->peer_base + recv_counter_off(s), rl->peer_rkey.rkey,
                                       &c->comp);
        break;
    default:
        return UCS_ERR_INVALID_PARAM;
    }
    if (status == UCS_OK) {
        c->immediate = 1;
    }
    return status;
}

/* Posts `seq` on rail 1, progressing while its send queue is full. */
static void post_on_rail1(struct side *s, uint32_t seq)
{
    double deadline = oob_now_s() + s->opt->timeout_s;
    ucs_status_t status;
    for (;;) {
        status = post_op(s, 1, seq);
        if (status == UCS_OK || status == UCS_INPROGRESS) {
            return;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            die(s, "op %u (%s) on rail 1: %s", seq, op_kind_names[s->plan[seq].kind],
                ucs_status_string(status));
        }
        if (oob_now_s() > deadline || s->rail[1].failed) {
            die(s, "rail 1 stopped taking operations (%s)",
                s->rail[1].failed ? ucs_status_string(s->rail[1].fail_status) : "queue full");
        }
        progress(s);
    }
}

/* Which stream op an op_info describes, checked against the plan: -1 if it
 * does not match any op posted on rail 0. */
static int64_t op_info_seq(struct side *s, const uct_ep_op_info_t *info)
{
    const struct rail *r0 = &s->rail[0];
    uint64_t seq = UINT64_MAX, addr;
    const struct plan_op *op;

    if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_OPERATION)) {
        return -1;
    }
    switch (info->operation) {
    case UCT_EP_OP_AM_SHORT:
        if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_AM) ||
            !(info->am.field_mask & UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE)) {
            return -1;
        }
        seq = info->am.header.value;
        break;
    case UCT_EP_OP_AM_BCOPY:
        if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_AM) ||
            !(info->am.field_mask & UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA) ||
            info->am.payload.data.length < 8) {
            return -1;
        }
        memcpy(&seq, info->am.payload.data.buffer, 8);
        break;
    case UCT_EP_OP_PUT_SHORT:
    case UCT_EP_OP_PUT_ZCOPY:
        if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_RMA) ||
            !(info->rma.field_mask & UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR)) {
            return -1;
        }
        addr = info->rma.remote_addr - s->peer_base;
        if (addr % SLOT_SIZE != 0) {
            return -1;
        }
        seq = addr / SLOT_SIZE;
        break;
    case UCT_EP_OP_GET_ZCOPY:
        if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_RMA) ||
            !(info->rma.field_mask & UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY) ||
            info->rma.payload.zcopy.iovcnt != 1) {
            return -1;
        }
        addr = (uint64_t)((uint8_t *)info->rma.payload.zcopy.iov[0].buffer - s->region);
        if (addr < send_dst_off(s, 0) || (addr - send_dst_off(s, 0)) % SLOT_SIZE != 0) {
            return -1;
        }
        seq = (addr - send_dst_off(s, 0)) / SLOT_SIZE;
        break;
    case UCT_EP_OP_ATOMIC_FETCH:
        if (!(info->field_mask & UCT_EP_OP_INFO_FIELD_ATOMIC) ||
            !(info->atomic.field_mask & UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT)) {
            return -1;
        }
        addr = (uint64_t)((uint8_t *)info->atomic.result - s->region);
        if (addr < send_result_off(s, 0) || (addr - send_result_off(s, 0)) % 8 != 0) {
            return -1;
        }
        seq = (addr - send_result_off(s, 0)) / 8;
        break;
    default:
        return -1;
    }
    if (seq >= s->st.posted_rail0) {
        return -1;
    }
    op = &s->plan[seq];
    switch (info->operation) {
    case UCT_EP_OP_AM_SHORT:
        if (op->kind != OP_AM_SHORT || info->am.am_id != AM_SEQ_SHORT ||
            info->am.payload.data.length != op->length ||
            !check_pattern(s->opt->seed, seq, info->am.payload.data.buffer, op->length)) {
            return -1;
        }
        break;
    case UCT_EP_OP_AM_BCOPY:
        if (op->kind != OP_AM_BCOPY || info->am.am_id != AM_SEQ_BCOPY ||
            info->am.payload.data.length != 8 + op->length ||
            !check_pattern(s->opt->seed, seq, (uint8_t *)info->am.payload.data.buffer + 8,
                           op->length)) {
            return -1;
        }
        break;
    case UCT_EP_OP_PUT_SHORT:
        if (op->kind != OP_PUT_SHORT || info->rma.rkey != r0->peer_rkey.rkey ||
            info->rma.payload.data.length != op->length ||
            !check_pattern(s->opt->seed, seq, info->rma.payload.data.buffer, op->length)) {
            return -1;
        }
        break;
    case UCT_EP_OP_PUT_ZCOPY:
        if (op->kind != OP_PUT_ZCOPY || info->rma.rkey != r0->peer_rkey.rkey ||
            info->rma.payload.zcopy.iovcnt != 1 ||
            info->rma.payload.zcopy.iov[0].buffer != s->region + send_src_off(seq) ||
            info->rma.payload.zcopy.iov[0].length != op->length ||
            info->rma.payload.zcopy.iov[0].memh != r0->memh || info->comp != &s->comps[seq].comp) {
            return -1;
        }
        break;
    case UCT_EP_OP_GET_ZCOPY:
        if (op->kind != OP_GET_ZCOPY || info->rma.rkey != r0->peer_rkey.rkey ||
            info->rma.remote_addr != s->peer_base + recv_get_off(s) + op->get_offset ||
            info->rma.payload.zcopy.iov[0].length != op->length ||
            info->rma.payload.zcopy.iov[0].memh != r0->memh || info->comp != &s->comps[seq].comp) {
            return -1;
        }
        break;
    case UCT_EP_OP_ATOMIC_FETCH:
        if (op->kind != OP_FADD || info->atomic.op != UCT_ATOMIC_OP_ADD ||
            info->atomic.value != op->add || info->atomic.rkey != r0->peer_rkey.rkey ||
            info->atomic.remote_addr != s->peer_base + recv_counter_off(s) ||
            info->atomic.size != 8 || info->comp != &s->comps[seq].comp) {
            return -1;
        }
        break;
    default:
        /* An operation the demo never posts. */
        return -1;
    }
    return (int64_t)seq;
}

/* Posts what `info` describes on rail 1: the rail-0 rkey and memh are
 * swapped for their rail-1 twins, everything else is taken from `info`. */
static ucs_status_t replay_from_info(struct side *s, const uct_ep_op_info_t *info)
{
    struct rail *r1 = &s->rail[1];
    uct_iov_t iov;
    struct pack_bytes p;
    ssize_t n;

    switch (info->operation) {
    case UCT_EP_OP_AM_SHORT:
        return uct_ep_am_short(r1->ep, info->am.am_id, info->am.header.value,
                               info->am.payload.data.buffer,
                               (unsigned)info->am.payload.data.length);
    case UCT_EP_OP_AM_BCOPY:
        p.data   = info->am.payload.data.buffer;
        p.length = info->am.payload.data.length;
        n = uct_ep_am_bcopy(r1->ep, info->am.am_id, pack_bytes_cb, &p,
                            (info->am.field_mask & UCT_EP_OP_INFO_AM_FIELD_FLAGS) ? info->am.flags
                                                                                  : 0);
        return n < 0 ? (ucs_status_t)n : UCS_OK;
    case UCT_EP_OP_PUT_SHORT:
        return uct_ep_put_short(r1->ep, info->rma.payload.data.buffer,
                                (unsigned)info->rma.payload.data.length, info->rma.remote_addr,
                                r1->peer_rkey.rkey);
    case UCT_EP_OP_PUT_ZCOPY:
    case UCT_EP_OP_GET_ZCOPY:
        iov      = info->rma.payload.zcopy.iov[0];
        iov.memh = r1->memh;
        return info->operation == UCT_EP_OP_PUT_ZCOPY
                       ? uct_ep_put_zcopy(r1->ep, &iov, 1, info->rma.remote_addr,
                                          r1->peer_rkey.rkey, info->comp)
                       : uct_ep_get_zcopy(r1->ep, &iov, 1, info->rma.remote_addr,
                                          r1->peer_rkey.rkey, info->comp);
    case UCT_EP_OP_ATOMIC_FETCH:
        return uct_ep_atomic64_fetch(r1->ep, info->atomic.op, info->atomic.value,
                                     info->atomic.result, info->atomic.remote_addr,
                                     r1->peer_rkey.rkey, info->comp);
    default:
        return UCS_ERR_UNSUPPORTED;
    }
}

/* The purge callback: check the op, then replay it on rail 1 at once, or
 * queue it (replayed from the plan after the purge) when rail 1 is full. */
static void purge_cb(const uct_ep_op_info_t *info, void *arg)
{
    struct side *s = arg;
    int64_t seq;
    ucs_status_t status;

    if ((info->field_mask & UCT_EP_OP_INFO_FIELD_OPERATION) &&
        info->operation == UCT_EP_OP_FLUSH) {
        return; /* nothing to carry over: rail 1 is flushed at the end anyway */
    }
    seq = op_info_seq(s, info);
    if (seq < 0) {
        fprintf(stderr, "[sender] purge reported an op that matches nothing posted on rail 0 "
                        "(operation %u, field_mask 0x%" PRIx64 ")\n",
                (info->field_mask & UCT_EP_OP_INFO_FIELD_OPERATION) ? info->operation : 999u,
                info->field_mask);
        s->st.bad++;
        return;
    }
    if (seq <= s->last_reported) {
        fprintf(stderr, "[sender] purge reported op %" PRId64 " after op %" PRId64
                        " (not in posting order, or twice)\n", seq, s->last_reported);
        s->st.bad++;
        return;
    }
    s->last_reported = seq;
    s->reported[seq] = 1;
    s->st.replayed++;
    if (s->replay_queued == 0) {
        status = replay_from_info(s, info);
        if (status == UCS_OK || status == UCS_INPROGRESS) {
            if (status == UCS_OK && info->comp != NULL) {
                s->comps[seq].immediate = 1;
            }
            return;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            fprintf(stderr, "[sender] replay of op %" PRId64 " on rail 1: %s\n", seq,
                    ucs_status_string(status));
            s->st.bad++;
            return;
        }
    }
    s->replay_queue[s->replay_queued++] = (uint32_t)seq;
}

static void run_failover(struct side *s)
{
    uct_iface_attr_v2_t attr;
    uct_ep_attr_t ep_attr;
    uct_ep_outstanding_purge_params_t purge;
    uint8_t tx_token[MAX_TOKEN];
    ucs_status_t status;
    double deadline, t_err;
    size_t i;

    t_err = oob_now_s();
    say(s, "error handler: rail 0 ep failed (%s)", ucs_status_string(s->rail[0].fail_status));

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH;
    status          = uct_iface_query_v2(s->rail[0].iface, &attr);
    if (status != UCS_OK) {
        die(s, "uct_iface_query_v2(rail 0, token length): %s", ucs_status_string(status));
    }
    if (!(attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN) || attr.tx_token_length == 0 ||
        attr.tx_token_length > MAX_TOKEN) {
        die(s, "rail 0 does not offer failover tokens (UCT_IFACE_FLAG_V2_QUERY_TOKEN %s, "
               "TX token length %zu)",
            (attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN) ? "set" : "not set",
            attr.tx_token_length);
    }
    memset(&ep_attr, 0, sizeof(ep_attr));
    ep_attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
    ep_attr.tx_token   = tx_token;
    status             = uct_ep_query(s->rail[0].ep, &ep_attr);
    if (status != UCS_OK) {
        die(s, "uct_ep_query(rail 0, TX token): %s", ucs_status_string(status));
    }
    send_ctl(s, AM_TOKEN_REQ, tx_token, attr.tx_token_length);
    say(s, "TX token (%zu bytes) sent over rail 1", attr.tx_token_length);

    deadline = oob_now_s() + s->opt->timeout_s;
    while (!s->token_reply_ready) {
        if (oob_now_s() > deadline) {
            die(s, "no RX token from the receiver");
        }
        progress(s);
    }
    if (s->token_reply_status != UCS_OK) {
        die(s, "the receiver could not derive the RX token: %s",
            ucs_status_string(s->token_reply_status));
    }
    say(s, "RX token (%zu bytes) received over rail 1", s->rx_token_len);

    memset(&purge, 0, sizeof(purge));
    purge.field_mask = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB |
                       UCT_EP_OUTSTANDING_FIELD_ARG;
    purge.rx_token = s->rx_token;
    purge.cb       = purge_cb;
    purge.arg      = s;
    status         = uct_ep_outstanding_purge(s->rail[0].ep, &purge);
    if (status != UCS_OK) {
        die(s, "uct_ep_outstanding_purge(rail 0): %s", ucs_status_string(status));
    }
    for (i = 0; i < s->replay_queued; i++) {
        post_on_rail1(s, s->replay_queue[i]);
    }
    {
        struct timespec t_end;
        clock_gettime(CLOCK_MONOTONIC, &t_end);
        s->st.cut_to_last_replay_us =
                (uint64_t)((t_end.tv_sec - s->t_cut.tv_sec) * 1000000ll +
                           (t_end.tv_nsec - s->t_cut.tv_nsec) / 1000);
    }
    say(s, "purge: %" PRIu64 " ops replayed on rail 1 (%zu of them after the purge returned), "
           "%.1f ms after the error",
        s->st.replayed, s->replay_queued, (oob_now_s() - t_err) * 1e3);
}

static void do_cut(struct side *s, uint32_t at)
{
    double deadline;
    say(s, "cutting rail 0 after %u of %u ops (side: %s)", at, s->n,
        s->opt->cut_side == CUT_BOTH ? "both" : s->opt->cut_side == CUT_SENDER ? "sender"
                                                                               : "receiver");
    clock_gettime(CLOCK_MONOTONIC, &s->t_cut);
    if (s->opt->cut_side & CUT_RECEIVER) {
        boot_send(s, BOOT_CUT, NULL, 0);
        deadline = oob_now_s() + s->opt->timeout_s;
        while (!s->cut_ack) {
            uint8_t msg[MAX_BOOT_MSG];
            size_t n = boot_recv(s, msg, sizeof(msg), 10);
            if (n > 0) {
                handle_boot_message(s, msg, n);
            }
            uct_worker_progress(s->worker);
            if (oob_now_s() > deadline) {
                die(s, "the receiver did not confirm the cut");
            }
        }
    }
    if (s->opt->cut_side & CUT_SENDER) {
        cut_rail0_here(s);
    }
    s->st.cut_done = 1;
}

static int run_sender(struct side *s)
{
    unsigned i, next;
    uint64_t lost = 0, dup = 0, bad = 0, replayed_or_lost_fetch;
    double deadline;
    ucs_status_t status;

    s->comps        = calloc(s->n, sizeof(*s->comps));
    s->replay_queue = calloc(s->n, sizeof(*s->replay_queue));
    s->reported     = calloc(s->n, 1);
    if (s->comps == NULL || s->replay_queue == NULL || s->reported == NULL) {
        die(s, "out of memory");
    }
    s->last_reported = -1;
    for (i = 0; i < s->n; i++) {
        s->comps[i].comp.func   = op_completed;
        s->comps[i].comp.count  = 1;
        s->comps[i].comp.status = UCS_OK;
        s->comps[i].seq         = i;
        if (s->plan[i].kind == OP_PUT_ZCOPY) {
            fill_pattern(s->opt->seed, i, s->region + send_src_off(i), s->plan[i].length);
        }
    }
    set_am(s, 1, AM_TOKEN_REPLY, am_token_reply_cb);
    set_am(s, 1, AM_VERDICT, am_verdict_cb);

    if (s->opt->hold == HOLD_HANDLER) {
        say(s, "the error handler holds the rail-0 endpoint's ops (answers UCS_INPROGRESS)");
        status = UCS_OK;
    } else {
        status = uct_ep_failover_enable(s->rail[0].ep);
    }
    if (status != UCS_OK) {
        if (s->opt->cut_at >= 0) {
            die(s, "uct_ep_failover_enable(rail 0): %s: this library cannot fail over yet "
                   "(run with --cut-at none to check everything else)", ucs_status_string(status));
        }
        say(s, "uct_ep_failover_enable: %s (no cut requested, going on)",
            ucs_status_string(status));
    } else if (s->opt->hold == HOLD_ENABLE) {
        say(s, "failover enabled on the rail-0 endpoint");
    }

    exchange_and_connect(s);
    if (s->opt->loss > 0) {
        status = uct_soft_hca_loss_set(s->rail[0].md_name, s->opt->loss);
        if (status != UCS_OK) {
            die(s, "uct_soft_hca_loss_set: %s", ucs_status_string(status));
        }
    }

    /* the stream on rail 0, cut at op K, until rail 0 fails or all is posted */
    for (next = 0; next < s->n && !s->rail[0].failed; next++) {
        if ((long)next == s->opt->cut_at) {
            do_cut(s, next);
        }
        deadline = oob_now_s() + s->opt->timeout_s;
        for (;;) {
            status = post_op(s, 0, next);
            if (status == UCS_OK || status == UCS_INPROGRESS || s->rail[0].failed) {
                break;
            }
            if (status != UCS_ERR_NO_RESOURCE) {
                if (!s->st.cut_done && !s->rail[0].failed) {
                    die(s, "op %u (%s) on rail 0 before the cut: %s", next,
                        op_kind_names[s->plan[next].kind], ucs_status_string(status));
                }
                break; /* the endpoint is going down; its error handler follows */
            }
            if (oob_now_s() > deadline) {
                die(s, "rail 0 send queue never drained");
            }
            progress(s);
        }
        if (status != UCS_OK && status != UCS_INPROGRESS) {
            break;
        }
    }
    s->st.posted_rail0 = next;
    if (s->opt->cut_at >= 0 && !s->st.cut_done && !s->rail[0].failed) {
        do_cut(s, next); /* --cut-at at or past the end: cut after the last op */
    }
    say(s, "%u ops posted on rail 0", next);

    /* Rail 0 either fails (cut with ops in flight) or drains (no cut, or
     * nothing was outstanding when the cable went). */
    deadline = oob_now_s() + s->opt->timeout_s;
    while (!s->rail[0].failed) {
        status = uct_ep_flush(s->rail[0].ep, 0, NULL);
        if (status == UCS_OK) {
            break;
        }
        if (status != UCS_INPROGRESS && status != UCS_ERR_NO_RESOURCE && !s->st.cut_done &&
            !s->rail[0].failed) {
            die(s, "flush of rail 0: %s", ucs_status_string(status));
        }
        if (oob_now_s() > deadline) {
            die(s, "rail 0 neither drained nor failed");
        }
        progress(s);
    }
    if (s->rail[0].failed) {
        if (!s->st.cut_done) {
            /* loss beyond what UCX_RC_TIMEOUT x RETRY_COUNT rides out, or a
             * stalled machine: a real caller fails over just the same */
            say(s, "rail 0 failed before the cut (%s): failing over anyway",
                ucs_status_string(s->rail[0].fail_status));
            clock_gettime(CLOCK_MONOTONIC, &s->t_cut);
            s->st.cut_done = 1;
        }
        run_failover(s);
    } else if (s->st.cut_done) {
        clock_gettime(CLOCK_MONOTONIC, &s->t_cut);
        say(s, "rail 0 drained before the cut was noticed: nothing to fail over");
    }

    /* the rest of the stream on rail 1 */
    for (i = next; i < s->n; i++) {
        post_on_rail1(s, i);
    }
    flush_ep(s, 1);
    deadline = oob_now_s() + s->opt->timeout_s;
    for (i = 0; i < s->n; i++) {
        const struct plan_op *op = &s->plan[i];
        if (op->kind != OP_PUT_ZCOPY && op->kind != OP_GET_ZCOPY && op->kind != OP_FADD) {
            continue;
        }
        while (s->comps[i].calls == 0 && !s->comps[i].immediate && oob_now_s() < deadline) {
            progress(s);
        }
    }

    /* the sender's checks: completions once each, gets' data, fetched values */
    replayed_or_lost_fetch = 0;
    for (i = 0; i < s->n; i++) {
        const struct plan_op *op = &s->plan[i];
        const struct op_comp *c  = &s->comps[i];
        if (op->kind != OP_PUT_ZCOPY && op->kind != OP_GET_ZCOPY && op->kind != OP_FADD) {
            continue;
        }
        if (c->calls > 1 || (c->calls == 1 && c->immediate && !s->reported[i])) {
            fprintf(stderr, "[sender] op %u (%s): completion called %d times\n", i,
                    op_kind_names[op->kind], c->calls + c->immediate);
            dup++;
            continue;
        }
        if (c->calls == 0 && !c->immediate) {
            fprintf(stderr, "[sender] op %u (%s) never completed\n", i, op_kind_names[op->kind]);
            lost++;
            continue;
        }
        if (c->calls == 1 && c->status != UCS_OK) {
            /* allowed only for a fetch the peer executed on rail 0 whose
             * result never came back: the add counts, the value is gone */
            if (op->kind == OP_FADD && i < s->st.posted_rail0 && !s->reported[i]) {
                s->st.fetch_result_lost++;
                continue;
            }
            fprintf(stderr, "[sender] op %u (%s) completed with %s\n", i, op_kind_names[op->kind],
                    ucs_status_string(c->status));
            lost++;
            continue;
        }
        if (op->kind == OP_GET_ZCOPY) {
            const uint8_t *got = s->region + send_dst_off(s, i);
            size_t j;
            for (j = 0; j < op->length; j++) {
                if (got[j] != pattern_byte(s->opt->seed, GET_REGION_SEQ, op->get_offset + j)) {
                    fprintf(stderr, "[sender] get %u: wrong data at byte %zu\n", i, j);
                    bad++;
                    break;
                }
            }
        } else if (op->kind == OP_FADD) {
            uint64_t got;
            memcpy(&got, s->region + send_result_off(s, i), 8);
            if (got != op->expect) {
                fprintf(stderr, "[sender] fetch-add %u fetched %" PRIu64 ", expected %" PRIu64
                                " (an earlier add lost or applied twice)\n", i, got, op->expect);
                bad++;
            }
        }
    }
    (void)replayed_or_lost_fetch;
    s->st.posted               = s->n;
    s->st.delivered_before_cut = s->st.posted_rail0 - s->st.replayed;
    s->st.lost                 = lost;
    s->st.duplicated           = dup;
    s->st.bad += bad;
    send_ctl(s, AM_DONE, &s->st, sizeof(s->st));
    flush_ep(s, 1);

    deadline = oob_now_s() + s->opt->timeout_s;
    while (!s->verdict_ready) {
        if (oob_now_s() > deadline) {
            die(s, "no verdict from the receiver");
        }
        progress(s);
    }
    /* the receiver says goodbye once its verdict is acknowledged on rail 1;
     * leaving earlier would fail its flush */
    while (!s->bye) {
        uint8_t msg[MAX_BOOT_MSG];
        size_t n = boot_recv(s, msg, sizeof(msg), -1); /* bounded by the alarm */
        if (n > 0) {
            handle_boot_message(s, msg, n);
        }
    }
    return 0;
}

/* --------------------------------------------------------------- receiver */

static void answer_token_request(struct side *s)
{
    uct_iface_attr_v2_t attr;
    uint8_t reply[1 + MAX_TOKEN];
    ucs_status_t status;
    int8_t st;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH;
    status          = uct_iface_query_v2(s->rail[0].iface, &attr);
    if (status == UCS_OK && (attr.rx_token_length == 0 || attr.rx_token_length > MAX_TOKEN)) {
        status = UCS_ERR_UNSUPPORTED;
    }
    if (status == UCS_OK) {
        size_t rx_len = attr.rx_token_length;
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
        attr.tx_token   = s->tx_token;
        attr.rx_token   = reply + 1;
        status          = uct_iface_query_v2(s->rail[0].iface, &attr);
        st              = (int8_t)status;
        memcpy(reply, &st, 1);
        send_ctl(s, AM_TOKEN_REPLY, reply, status == UCS_OK ? 1 + rx_len : 1);
    } else {
        st = (int8_t)status;
        memcpy(reply, &st, 1);
        send_ctl(s, AM_TOKEN_REPLY, reply, 1);
    }
    say(s, "RX token derived from the sender's TX token (%zu bytes) on rail 0: %s, "
           "sent back over rail 1", s->tx_token_len, ucs_status_string(status));
}

static int run_receiver(struct side *s)
{
    const uint8_t *counter_p;
    uint64_t lost = 0, dup = 0, bad = 0, counter;
    unsigned i, idle;
    size_t j;
    ucs_status_t status;

    s->am_count = calloc(s->n, sizeof(*s->am_count));
    if (s->am_count == NULL) {
        die(s, "out of memory");
    }
    for (j = 0; j < GET_REGION_SIZE; j++) {
        s->region[recv_get_off(s) + j] = pattern_byte(s->opt->seed, GET_REGION_SEQ, j);
    }
    set_am(s, 0, AM_SEQ_SHORT, am_short_rail0);
    set_am(s, 0, AM_SEQ_BCOPY, am_bcopy_rail0);
    set_am(s, 1, AM_SEQ_SHORT, am_short_rail1);
    set_am(s, 1, AM_SEQ_BCOPY, am_bcopy_rail1);
    set_am(s, 1, AM_TOKEN_REQ, am_token_req_cb);
    set_am(s, 1, AM_DONE, am_done_cb);

    exchange_and_connect(s);
    if (s->opt->loss > 0) {
        status = uct_soft_hca_loss_set(s->rail[0].md_name, s->opt->loss);
        if (status != UCS_OK) {
            die(s, "uct_soft_hca_loss_set: %s", ucs_status_string(status));
        }
    }

    /* bounded by the process alarm; bootstrap messages (the cut) are pumped
     * inside progress() */
    while (!s->done_ready) {
        if (s->token_req_ready) {
            s->token_req_ready = 0;
            answer_token_request(s);
        }
        progress(s);
    }
    /* whatever rail 0 accepted before the cut is dispatched by now or sits
     * in its completion queue: drain it */
    for (idle = 0; idle < 1000;) {
        idle = uct_iface_progress(s->rail[0].iface) == 0 ? idle + 1 : 0;
    }

    for (i = 0; i < s->n; i++) {
        const struct plan_op *op = &s->plan[i];
        const uint8_t *slot      = s->region + recv_put_off(i);
        switch (op->kind) {
        case OP_AM_SHORT:
        case OP_AM_BCOPY:
            if (s->am_count[i] == 0) {
                fprintf(stderr, "[receiver] AM %u (%s) never arrived\n", i, op_kind_names[op->kind]);
                lost++;
            } else if (s->am_count[i] > 1) {
                fprintf(stderr, "[receiver] AM %u (%s) arrived %u times\n", i,
                        op_kind_names[op->kind], s->am_count[i]);
                dup++;
            }
            break;
        case OP_PUT_SHORT:
        case OP_PUT_ZCOPY:
            if (!check_pattern(s->opt->seed, i, slot, op->length)) {
                int zero = 1;
                for (j = 0; j < op->length; j++) {
                    zero &= slot[j] == 0;
                }
                fprintf(stderr, "[receiver] put %u (%s, %u bytes): %s\n", i,
                        op_kind_names[op->kind], op->length,
                        zero ? "never arrived" : "wrong bytes");
                if (zero) {
                    lost++;
                } else {
                    bad++;
                }
            }
            for (j = op->length; j < SLOT_SIZE; j++) {
                if (slot[j] != 0) {
                    fprintf(stderr, "[receiver] put %u wrote past its %u bytes\n", i, op->length);
                    bad++;
                    break;
                }
            }
            break;
        default:
            for (j = 0; j < SLOT_SIZE; j++) {
                if (slot[j] != 0) {
                    fprintf(stderr, "[receiver] slot %u (%s) was written to\n", i,
                            op_kind_names[op->kind]);
                    bad++;
                    break;
                }
            }
            break;
        }
    }
    for (j = 0; j < GET_REGION_SIZE; j++) {
        if (s->region[recv_get_off(s) + j] != pattern_byte(s->opt->seed, GET_REGION_SEQ, j)) {
            fprintf(stderr, "[receiver] the get region changed at byte %zu\n", j);
            bad++;
            break;
        }
    }
    counter_p = s->region + recv_counter_off(s);
    memcpy(&counter, counter_p, 8);
    s->verdict.counter        = counter;
    s->verdict.counter_expect = plan_counter_total(s);
    if (counter < s->verdict.counter_expect) {
        fprintf(stderr, "[receiver] counter %" PRIu64 ", expected %" PRIu64 ": an add was lost\n",
                counter, s->verdict.counter_expect);
        lost++;
    } else if (counter > s->verdict.counter_expect) {
        fprintf(stderr, "[receiver] counter %" PRIu64 ", expected %" PRIu64
                        ": an add was applied twice\n", counter, s->verdict.counter_expect);
        dup++;
    }
    s->verdict.lost       = lost;
    s->verdict.duplicated = dup;
    s->verdict.bad        = bad + s->am_bad;
    send_ctl(s, AM_VERDICT, &s->verdict, sizeof(s->verdict));
    flush_ep(s, 1);
    boot_send(s, BOOT_BYE, NULL, 0);
    return 0;
}

/* ------------------------------------------------------------------ main */

static int print_verdict(struct side *s, const struct sender_stats *st,
                         const struct receiver_stats *rv)
{
    uint64_t lost = st->lost + rv->lost, dup = st->duplicated + rv->duplicated;
    uint64_t bad  = st->bad + rv->bad;
    printf("[%s] posted %" PRIu64 ", delivered-before-cut %" PRIu64 ", replayed %" PRIu64
           ", lost %" PRIu64 ", duplicated %" PRIu64 ", cut-to-last-replay %.1f ms"
           " (posted on rail 1 after failover %" PRIu64 ", rail-0 AMs %" PRIu64
           ", rail-1 AMs %" PRIu64 ", counter %" PRIu64 "/%" PRIu64
           ", fetch results lost %" PRIu64 ", other errors %" PRIu64 ")\n",
           s->name, st->posted, st->delivered_before_cut, st->replayed, lost, dup,
           st->cut_to_last_replay_us / 1000.0, st->posted - st->posted_rail0, rv->am_rail[0], rv->am_rail[1], rv->counter,
           rv->counter_expect, st->fetch_result_lost, bad);
    fflush(stdout);
    return (lost == 0 && dup == 0 && bad == 0) ? 0 : 1;
}

static int run_side(struct options *opt, int role, int boot_fd)
{
    struct side side;
    struct side *s = &side;
    ucs_status_t status;
    int r, rc;

    memset(s, 0, sizeof(*s));
    s->role    = role;
    s->name    = role == ROLE_SENDER ? "sender" : "receiver";
    s->opt     = opt;
    s->n       = opt->ops;
    s->boot_fd = boot_fd;
    signal(SIGALRM, on_alarm);
    alarm(opt->timeout_s);

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &s->async);
    if (status != UCS_OK) {
        die(s, "ucs_async_context_create: %s", ucs_status_string(status));
    }
    status = uct_worker_create(s->async, UCS_THREAD_MODE_SINGLE, &s->worker);
    if (status != UCS_OK) {
        die(s, "uct_worker_create: %s", ucs_status_string(status));
    }
    for (r = 0; r < RAILS; r++) {
        s->rail[r].md_name = opt->rail_md[r];
        open_rail(s, r);
    }
    make_plan(s);
    s->region_len = role == ROLE_SENDER ? send_region_len(s) : recv_region_len(s);
    register_region(s);

    rc = role == ROLE_SENDER ? run_sender(s) : run_receiver(s);
    if (rc == 0) {
        rc = role == ROLE_SENDER ? print_verdict(s, &s->st, &s->verdict)
                                 : print_verdict(s, &s->done, &s->verdict);
    }
    close_side(s);
    close(boot_fd);
    return rc;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: failover_demo [options]\n"
            "  --ops N              operations in the stream (default 1000, at most %d)\n"
            "  --seed S             stream and payload seed (default 1)\n"
            "  --cut-at K|none      cut rail 0 before posting op K (default ops/2)\n"
            "  --cut-side S         sender, receiver or both (default both)\n"
            "  --loss P             packet loss ratio on rail 0 before the cut (0..1)\n"
            "  --timeout SEC        bound on the whole run (default 60)\n"
            "  --quiet              only the verdict lines\n"
            "  --rails MD0,MD1      the two memory domains (default mlx5_0,mlx5_1)\n"
            "  --role R --bootstrap PATH   run one side only (sender or receiver), meeting\n"
            "                       the other through a Unix socket at PATH (the receiver\n"
            "                       listens), e.g. in two network namespaces\n"
            "  --cut-cmd CMD        cut by running CMD (e.g. ip link set veth0 down) on the\n"
            "                       cutting side(s) instead of uct_soft_hca_link_set\n"
            "  --hold H             how the sender keeps rail 0's outstanding ops for purge:\n"
            "                       enable (uct_ep_failover_enable, default) or handler\n"
            "                       (the error handler answers UCS_INPROGRESS)\n"
            "Devices: UCX_SOFT_HCA_DEVICES (default " DEFAULT_DEVICES ").\n"
            "Exit status 0 only if nothing was lost or duplicated.\n",
            MAX_OPS);
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        { "ops", required_argument, NULL, 'n' },      { "seed", required_argument, NULL, 's' },
        { "cut-at", required_argument, NULL, 'k' },   { "cut-side", required_argument, NULL, 'c' },
        { "loss", required_argument, NULL, 'l' },     { "quiet", no_argument, NULL, 'q' },
        { "timeout", required_argument, NULL, 't' },  { "role", required_argument, NULL, 'r' },
        { "bootstrap", required_argument, NULL, 'b' }, { "cut-cmd", required_argument, NULL, 'x' },
        { "rails", required_argument, NULL, 'R' },    { "help", no_argument, NULL, 'h' },
        { "hold", required_argument, NULL, 'H' },
        { NULL, 0, NULL, 0 }
    };
    static char rails[128];
    int c, cut_at_set = 0;
    char *end, *comma;

    memset(opt, 0, sizeof(*opt));
    opt->ops        = 1000;
    opt->seed       = 1;
    opt->cut_side   = CUT_BOTH;
    opt->timeout_s  = 60;
    opt->role       = -1;
    opt->rail_md[0] = "mlx5_0";
    opt->rail_md[1] = "mlx5_1";
    opt->hold       = HOLD_ENABLE;
    while ((c = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            opt->ops = (unsigned)strtoul(optarg, &end, 0);
            if (*end || opt->ops == 0 || opt->ops > MAX_OPS) {
                fprintf(stderr, "failover_demo: --ops must be 1..%d\n", MAX_OPS);
                return -1;
            }
            break;
        case 's':
            opt->seed = strtoull(optarg, &end, 0);
            if (*end) {
                fprintf(stderr, "failover_demo: bad --seed\n");
                return -1;
            }
            break;
        case 'k':
            cut_at_set = 1;
            if (strcmp(optarg, "none") == 0) {
                opt->cut_at = -1;
            } else {
                opt->cut_at = strtol(optarg, &end, 0);
                if (*end || opt->cut_at < 0) {
                    fprintf(stderr, "failover_demo: --cut-at takes an op index or 'none'\n");
                    return -1;
                }
            }
            break;
        case 'c':
            if (strcmp(optarg, "sender") == 0) {
                opt->cut_side = CUT_SENDER;
            } else if (strcmp(optarg, "receiver") == 0) {
                opt->cut_side = CUT_RECEIVER;
            } else if (strcmp(optarg, "both") == 0) {
                opt->cut_side = CUT_BOTH;
            } else {
                fprintf(stderr, "failover_demo: --cut-side is sender, receiver or both\n");
                return -1;
            }
            break;
        case 'l':
            opt->loss = strtod(optarg, &end);
            if (*end || !(opt->loss >= 0 && opt->loss < 1)) {
                fprintf(stderr, "failover_demo: --loss must be in [0, 1)\n");
                return -1;
            }
            break;
        case 'q':
            opt->quiet = 1;
            break;
        case 't':
            opt->timeout_s = (unsigned)strtoul(optarg, &end, 0);
            if (*end || opt->timeout_s == 0) {
                fprintf(stderr, "failover_demo: bad --timeout\n");
                return -1;
            }
            break;
        case 'r':
            if (strcmp(optarg, "sender") == 0) {
                opt->role = ROLE_SENDER;
            } else if (strcmp(optarg, "receiver") == 0) {
                opt->role = ROLE_RECEIVER;
            } else {
                fprintf(stderr, "failover_demo: --role is sender or receiver\n");
                return -1;
            }
            break;
        case 'b':
            opt->bootstrap = optarg;
            break;
        case 'x':
            opt->cut_cmd = optarg;
            break;
        case 'H':
            if (strcmp(optarg, "enable") == 0) {
                opt->hold = HOLD_ENABLE;
            } else if (strcmp(optarg, "handler") == 0) {
                opt->hold = HOLD_HANDLER;
            } else {
                fprintf(stderr, "failover_demo: --hold is enable or handler\n");
                return -1;
            }
            break;
        case 'R':
            snprintf(rails, sizeof(rails), "%s", optarg);
            comma = strchr(rails, ',');
            if (comma == NULL || comma == rails || comma[1] == '\0') {
                fprintf(stderr, "failover_demo: --rails takes MD0,MD1\n");
                return -1;
            }
            *comma          = '\0';
            opt->rail_md[0] = rails;
            opt->rail_md[1] = comma + 1;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return -1;
    }
    if (!cut_at_set) {
        opt->cut_at = opt->ops / 2;
    }
    if ((opt->role >= 0) != (opt->bootstrap != NULL)) {
        fprintf(stderr, "failover_demo: --role and --bootstrap go together\n");
        return -1;
    }
    return 0;
}

/* --role mode: the receiver listens on PATH, the sender connects (retrying
 * while the receiver starts up). */
static int bootstrap_connect(const struct options *opt)
{
    struct sockaddr_un addr;
    int fd, conn, attempt;

    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    if (strlen(opt->bootstrap) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "failover_demo: bootstrap path too long\n");
        return -1;
    }
    strcpy(addr.sun_path, opt->bootstrap);
    fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0) {
        perror("failover_demo: socket");
        return -1;
    }
    if (opt->role == ROLE_RECEIVER) {
        unlink(opt->bootstrap);
        if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 1) < 0) {
            perror("failover_demo: bind/listen on the bootstrap path");
            return -1;
        }
        conn = accept(fd, NULL, NULL); /* bounded by the alarm */
        if (conn < 0) {
            perror("failover_demo: accept");
            return -1;
        }
        close(fd);
        unlink(opt->bootstrap);
        return conn;
    }
    for (attempt = 0; attempt < 200; attempt++) {
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
            return fd;
        }
        usleep(50000);
    }
    fprintf(stderr, "failover_demo: no receiver at %s after 10 s\n", opt->bootstrap);
    return -1;
}

int main(int argc, char **argv)
{
    struct options opt;
    int fds[2], status_sender = 0, status_receiver = 0, rc;
    pid_t receiver, sender, pid;

    if (parse_options(argc, argv, &opt) != 0) {
        return 2;
    }
    if (getenv("UCX_SOFT_HCA_DEVICES") == NULL) {
        setenv("UCX_SOFT_HCA_DEVICES", DEFAULT_DEVICES, 1);
    }
    /* detect a pulled cable in tens of milliseconds, not seconds */
    if (getenv("UCX_RC_TIMEOUT") == NULL) {
        setenv("UCX_RC_TIMEOUT", "10ms", 1);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    alarm(opt.timeout_s + 15);

    if (opt.role >= 0) {
        int fd = bootstrap_connect(&opt);
        return fd < 0 ? 1 : run_side(&opt, opt.role, fd);
    }

    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) != 0) {
        perror("failover_demo: socketpair");
        return 1;
    }
    receiver = fork();
    if (receiver == 0) {
        close(fds[0]);
        _exit(run_side(&opt, ROLE_RECEIVER, fds[1]));
    }
    sender = fork();
    if (sender == 0) {
        close(fds[1]);
        _exit(run_side(&opt, ROLE_SENDER, fds[0]));
    }
    close(fds[0]);
    close(fds[1]);
    if (receiver < 0 || sender < 0) {
        perror("failover_demo: fork");
        return 1;
    }
    /* Each side has its own alarm and sees the other's exit as EOF on the
     * bootstrap socket, so both end; ours is the last resort. */
    rc = 0;
    while ((pid = wait(&rc)) > 0) {
        int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
        if (pid == sender) {
            status_sender = code;
        } else if (pid == receiver) {
            status_receiver = code;
        }
    }
    if (status_sender != 0 || status_receiver != 0) {
        fprintf(stderr, "failover_demo: FAILED (sender exit %d, receiver exit %d)\n",
                status_sender, status_receiver);
        return 1;
    }
    return 0;
}
