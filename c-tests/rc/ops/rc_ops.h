/*
 * rc_ops: what the harness (rc_ops.c) and the test groups (rc_ops_<group>.c)
 * share: the context of one side, the commands the initiator sends the
 * target, and the helpers the groups call (checks, waits, allocation in the
 * target's region, posting with retries, AM plans).
 */
#ifndef RC_OPS_H
#define RC_OPS_H

#define _GNU_SOURCE
#include <uct/api/uct.h>

#include "oob.h"

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


/* ------------------------------------------- shared types and macros */

struct am_expect {
    uint8_t id;
    uint32_t tag, length;
    char what[48];
};

struct am_plan {
    struct am_expect *e;
    unsigned n, cap;
};

/* Repeats `expr` (a ucs_status_t) while the ep is out of resources. */
#define POST(c, expr) \
    ({ \
        ucs_status_t _st; \
        double _deadline = oob_now_s() + (c)->wait_s; \
        unsigned _idle   = 0; \
        for (;;) { \
            _st = (expr); \
            if (_st != UCS_ERR_NO_RESOURCE || oob_now_s() > _deadline) { \
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

/* Local guard bytes around a get destination. */
#define LOCAL_GUARD_BYTE 0xa5

struct unpack_arg {
    uint8_t *dst;
    size_t len;
    int calls;
};

/* Posts one data AM carrying message (tag, len) with `op`; adds it to the
 * plan. Returns the post status (bcopy: UCS_OK if it packed len bytes). */
enum am_op { OP_AM_SHORT, OP_AM_SHORT_IOV, OP_AM_BCOPY, OP_AM_ZCOPY };

struct am_zcopy_shape {
    size_t hdr_len;
    unsigned iovcnt;
};

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

/* ----------------------------------------------------- harness helpers */

void die(struct ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void check(struct ctx *c, int ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void fill_pat(uint32_t tag, uint8_t *dst, size_t len, size_t first);
long find_bad(uint32_t tag, const uint8_t *src, size_t len, size_t first);
void make_msg(uint32_t tag, uint8_t *dst, size_t len);
void msg_send(struct ctx *c, uint32_t type, const void *data, size_t len);
void *msg_recv(struct ctx *c, uint32_t *type, size_t *len);
unsigned progress(struct ctx *c);
void progress_idle(struct ctx *c, unsigned *idle);
int wait_calls(struct ctx *c, const int *calls, int want, double seconds);
void progress_for(struct ctx *c, int ms);
void comp_init(struct comp *cp);
ucs_status_t flush_ep_wait(struct ctx *c, uct_ep_h ep, unsigned flags);
int comp_ok(const struct comp *cp, ucs_status_t posted, char *why, size_t why_len);
uint32_t new_tag(struct ctx *c);
void *rpc(struct ctx *c, uint32_t type, const void *arg, size_t len, size_t *reply_len);
struct cmd_args rpc_args(struct ctx *c, uint32_t type, uint64_t a, uint64_t b, uint64_t d3,
                         uint64_t d4);
int target_mem_is(struct ctx *c, size_t off, size_t len, uint32_t tag, size_t guard,
                  char *why, size_t why_len);
size_t talloc(struct ctx *c, size_t len);
uint8_t *lalloc(struct ctx *c, size_t len);
void plan_add(struct am_plan *p, uint8_t id, uint32_t tag, uint32_t length, const char *what);
void am_report_check(struct ctx *c, const struct am_plan *p, int settle_ms, int per_entry,
                     const char *name);
size_t pack_cb(void *dest, void *arg);
ssize_t post_am_bcopy(struct ctx *c, uct_ep_h ep, uint8_t id, const uint8_t *msg, size_t len);
ucs_status_t post_am_short(struct ctx *c, uct_ep_h ep, uint8_t id, const uint8_t *msg,
                           size_t len);
unsigned sizes_upto(size_t lo, size_t hi, const size_t *list, unsigned n, size_t *out);
size_t min_sz(size_t a, size_t b);
void make_iov(struct ctx *c, uct_iov_t *iov, unsigned count, uint8_t *buf, size_t len);
void guard_local(uint8_t *buf, size_t len);
int got_ok(const uint8_t *buf, size_t len, uint32_t tag, size_t first, char *why,
           size_t why_len);
void unpack_cb(void *arg, const void *data, size_t length);
ucs_status_t post_data_am(struct ctx *c, struct am_plan *plan, enum am_op op, size_t len,
                          const struct am_zcopy_shape *zs, struct comp *cp, const char *what);
ucs_status_t pend_post(struct pend *p);
ucs_status_t pend_cb(uct_pending_req_t *self);
ucs_status_t connect_ep2(struct ctx *c);
void destroy_ep2(struct ctx *c);

/* ---------------------------------------------------------------- groups */

/* One function per group, each in rc_ops_<group>.c. */
void test_put(struct ctx *c);
void test_get(struct ctx *c);
void test_am(struct ctx *c);
void test_atomics(struct ctx *c);
void test_ordering(struct ctx *c);
void test_pending(struct ctx *c);
void test_flush(struct ctx *c);
void test_fence(struct ctx *c);
void test_remote_error(struct ctx *c);
void test_cancel(struct ctx *c);
void test_destroyed_ep(struct ctx *c);
void test_retention(struct ctx *c);
void test_events(struct ctx *c);
void test_fc(struct ctx *c);
void test_empty(struct ctx *c);
void test_bad_input(struct ctx *c);
void test_reverse(struct ctx *c);
void test_caps(struct ctx *c);

#endif
