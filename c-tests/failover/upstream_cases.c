/*
 * UCX's own test cases for the failover API, restated in our words and run
 * against this library (issue 13): each case gives UCX's input and checks
 * UCX's expected status or behaviour, printing one line per case:
 *
 *   CASE <upstream test> ... ok
 *   CASE <upstream test> ... FAILED: <what differed>
 *
 * Sources (openucx/ucx): test/gtest/uct/ib/test_ib_mlx5_ext.cc (master and
 * pull request 11810), test/gtest/uct/v2/test_uct_query.cc
 * query_token_support (with 11804's rc_mlx5 expectation),
 * test/gtest/uct/test_peer_failure.cc (inject_error and the pending purge),
 * 11804's test_rc_mlx5_token_query, 11810's test_uct_outstanding_purge and
 * err_handler_outstanding_purge, 11891's purge_outstanding (invalidate,
 * flush, handler, purge twice).
 *
 * Two builds (c-tests/failover/CMakeLists.txt):
 *   - against our headers, with the pull requests' additions
 *     (UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS, uct_ep_failover_enable);
 *   - with FAILOVER_MASTER_LAYOUT: only what UCX master's uct_v2.h has. The
 *     v2 structs the cases use are checked at compile time against master's
 *     sizes and offsets (master_layout.h, generated from
 *     c-tests/abi/master_layout.txt), and uct_ep_invalidate gets master's
 *     8-byte params struct (field_mask only). Where a case needs a held
 *     queue, the error handler answers UCS_INPROGRESS, master's way.
 *
 * Both processes' ends run in this process on two soft HCA devices; token
 * buffers are sized by the queried TX/RX token lengths. Exit status 0 only
 * if every case passed.
 */
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <uct/soft/soft_hca.h>
#include <ucs/async/async.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FAILOVER_MASTER_LAYOUT
#include "master_layout.h"

#define SAME_LAYOUT(type, member, master_offset) \
    _Static_assert(offsetof(type, member) == (master_offset), \
                   #type "." #member " is not where UCX master has it")
_Static_assert(sizeof(uct_iface_attr_v2_t) == ML_SIZE_uct_iface_attr_v2_t, "iface_attr_v2");
SAME_LAYOUT(uct_iface_attr_v2_t, cap, ML_OFF_uct_iface_attr_v2_t__cap);
SAME_LAYOUT(uct_iface_attr_v2_t, tx_token_length, ML_OFF_uct_iface_attr_v2_t__tx_token_length);
SAME_LAYOUT(uct_iface_attr_v2_t, rx_token_length, ML_OFF_uct_iface_attr_v2_t__rx_token_length);
SAME_LAYOUT(uct_iface_attr_v2_t, tx_token, ML_OFF_uct_iface_attr_v2_t__tx_token);
SAME_LAYOUT(uct_iface_attr_v2_t, rx_token, ML_OFF_uct_iface_attr_v2_t__rx_token);
_Static_assert(sizeof(uct_ep_attr_t) == ML_SIZE_uct_ep_attr, "ep_attr");
SAME_LAYOUT(uct_ep_attr_t, tx_token, ML_OFF_uct_ep_attr__tx_token);
_Static_assert(sizeof(uct_ep_outstanding_purge_params_t) ==
               ML_SIZE_uct_ep_outstanding_purge_params_t, "purge params");
SAME_LAYOUT(uct_ep_outstanding_purge_params_t, rx_token,
            ML_OFF_uct_ep_outstanding_purge_params_t__rx_token);
SAME_LAYOUT(uct_ep_outstanding_purge_params_t, cb, ML_OFF_uct_ep_outstanding_purge_params_t__cb);
SAME_LAYOUT(uct_ep_outstanding_purge_params_t, arg, ML_OFF_uct_ep_outstanding_purge_params_t__arg);
_Static_assert(sizeof(uct_ep_op_info_t) == ML_SIZE_uct_ep_op_info_t, "op_info");
SAME_LAYOUT(uct_ep_op_info_t, operation, ML_OFF_uct_ep_op_info_t__operation);
SAME_LAYOUT(uct_ep_op_info_t, am.am_id, ML_OFF_uct_ep_op_info_t__am__am_id);
SAME_LAYOUT(uct_ep_op_info_t, am.header.value, ML_OFF_uct_ep_op_info_t__am__header__value);
_Static_assert(UCT_IFACE_FLAG_V2_QUERY_TOKEN == ML_CONST_UCT_IFACE_FLAG_V2_QUERY_TOKEN, "flag");
_Static_assert(UCT_IFACE_ATTR_FIELD_TX_TOKEN == ML_CONST_UCT_IFACE_ATTR_FIELD_TX_TOKEN, "field");
_Static_assert(UCT_IFACE_ATTR_FIELD_RX_TOKEN == ML_CONST_UCT_IFACE_ATTR_FIELD_RX_TOKEN, "field");
_Static_assert(UCT_EP_ATTR_FIELD_TX_TOKEN == ML_CONST_UCT_EP_ATTR_FIELD_TX_TOKEN, "field");
_Static_assert(UCT_EP_OUTSTANDING_FIELD_CB == ML_CONST_UCT_EP_OUTSTANDING_FIELD_CB, "field");

/* UCX master's uct_ep_invalidate_params_t: field_mask alone (8 bytes,
 * /work/shared/abi/ucx-master-layout.txt); a master-built caller passes
 * exactly this much. */
typedef struct {
    uint64_t field_mask;
} invalidate_params_t;
_Static_assert(sizeof(invalidate_params_t) == 8, "master's invalidate params");
#define BUILD_NAME "master-layout"
#else
typedef uct_ep_invalidate_params_t invalidate_params_t;
#define BUILD_NAME "ours"
#endif

#define AM_ID        5
#define WAIT_SECONDS 20.0

static int failures;

/* --------------------------------------------------------------- plumbing */

struct end;

/* What an error handler saw and how it answers. */
struct handler {
    int calls;
    ucs_status_t status;
    ucs_status_t answer;
    /* err_handler_outstanding_purge: invalidate + purge inside the handler */
    int purge_inside;
    struct end *peer;
    int purged_ops;
    ucs_status_t purge_status;
    /* test_peer_failure: pending requests purged by the handler */
    int pending_purged;
};

struct end {
    const char *md_name, *dev_name;
    uct_component_h component;
    uct_md_h md;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_h iface;
    uct_iface_attr_t attr;
    struct handler handler;
    int am_received;
    uint64_t last_header;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int check(int ok, const char *fmt, ...)
{
    ok = ok != 0;
    if (!ok) {
        va_list ap;
        va_start(ap, fmt);
        printf("    expectation failed: ");
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    }
    return ok;
}

#define EXPECT_STATUS(expected, call) \
    check_status_of(#call, (expected), (call))

static int check_status_of(const char *what, ucs_status_t expected, ucs_status_t actual)
{
    return check(actual == expected, "%s: UCX expects %s, got %s", what,
                 ucs_status_string(expected), ucs_status_string(actual));
}

static void progress(struct end *a, struct end *b)
{
    uct_worker_progress(a->worker);
    uct_worker_progress(b->worker);
}

/* Progresses both ends until *value >= target; 0 after WAIT_SECONDS. */
static int wait_for(struct end *a, struct end *b, const int *value, int target)
{
    double deadline = now() + WAIT_SECONDS;
    while (*(volatile const int *)value < target) {
        if (now() > deadline) {
            return 0;
        }
        progress(a, b);
    }
    return 1;
}

static void spin(struct end *a, struct end *b, int rounds)
{
    while (rounds-- > 0) {
        progress(a, b);
    }
}

static ucs_status_t on_error(void *arg, uct_ep_h ep, ucs_status_t status);
static void purge_pending_cb(uct_pending_req_t *req, void *arg);

static ucs_status_t on_am(void *arg, void *data, size_t length, unsigned flags)
{
    struct end *e = arg;
    (void)flags;
    if (length >= sizeof(uint64_t)) {
        memcpy(&e->last_header, data, sizeof(uint64_t));
    }
    e->am_received++;
    return UCS_OK;
}

static int open_end(struct end *e, const char *md_name, const char *dev_name)
{
    uct_component_h *components;
    unsigned count;
    uct_iface_config_t *config;
    uct_iface_params_t params;

    memset(e, 0, sizeof(*e));
    e->md_name  = md_name;
    e->dev_name = dev_name;
    e->handler.answer = UCS_OK;
    if (uct_query_components(&components, &count) != UCS_OK || count == 0) {
        return 0;
    }
    e->component = components[0];
    uct_release_component_list(components);
    if (uct_md_open(e->component, md_name, NULL, &e->md) != UCS_OK ||
        ucs_async_context_create(UCS_ASYNC_MODE_POLL, &e->async) != UCS_OK ||
        uct_worker_create(e->async, UCS_THREAD_MODE_SINGLE, &e->worker) != UCS_OK ||
        uct_md_iface_config_read(e->md, "rc_mlx5", NULL, NULL, &config) != UCS_OK) {
        return 0;
    }
    /* UCX's peer-failure tests shorten the retransmission timeout (100 us,
     * 4 retries); no case here waits for one (failures are injected with
     * uct_ep_invalidate), so it is only kept short enough that a lost
     * packet costs little, and long enough that a loaded machine does not
     * time out a healthy pair. */
    uct_config_modify(config, "RC_TIMEOUT", "10ms");
    uct_config_modify(config, "RC_RETRY_COUNT", "7");
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_mlx5";
    params.mode.device.dev_name = dev_name;
    params.err_handler          = on_error;
    params.err_handler_arg      = e;
    if (uct_iface_open(e->md, e->worker, &params, config, &e->iface) != UCS_OK) {
        uct_config_release(config);
        return 0;
    }
    uct_config_release(config);
    uct_iface_progress_enable(e->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_iface_set_am_handler(e->iface, AM_ID, on_am, e, 0);
    return uct_iface_query(e->iface, &e->attr) == UCS_OK;
}

static void close_end(struct end *e)
{
    uct_iface_close(e->iface);
    uct_worker_destroy(e->worker);
    ucs_async_context_destroy(e->async);
    uct_md_close(e->md);
}

/* A connected ep pair: *ep_a on a towards b, *ep_b back. */
static int connect_pair(struct end *a, struct end *b, uct_ep_h *ep_a, uct_ep_h *ep_b)
{
    uct_ep_params_t ep_params;
    uint8_t dev_a[64], dev_b[64], addr_a[64], addr_b[64];

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = a->iface;
    if (uct_ep_create(&ep_params, ep_a) != UCS_OK) {
        return 0;
    }
    ep_params.iface = b->iface;
    if (uct_ep_create(&ep_params, ep_b) != UCS_OK) {
        return 0;
    }
    return uct_iface_get_device_address(a->iface, (uct_device_addr_t *)dev_a) == UCS_OK &&
           uct_iface_get_device_address(b->iface, (uct_device_addr_t *)dev_b) == UCS_OK &&
           uct_ep_get_address(*ep_a, (uct_ep_addr_t *)addr_a) == UCS_OK &&
           uct_ep_get_address(*ep_b, (uct_ep_addr_t *)addr_b) == UCS_OK &&
           uct_ep_connect_to_ep(*ep_a, (uct_device_addr_t *)dev_b, (uct_ep_addr_t *)addr_b) ==
                   UCS_OK &&
           uct_ep_connect_to_ep(*ep_b, (uct_device_addr_t *)dev_a, (uct_ep_addr_t *)addr_a) ==
                   UCS_OK;
}

/* Token lengths as the iface advertises them. */
static int token_lengths(struct end *e, size_t *tx_len, size_t *rx_len)
{
    uct_iface_attr_v2_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH |
                      UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH;
    if (uct_iface_query_v2(e->iface, &attr) != UCS_OK ||
        !(attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN)) {
        return 0;
    }
    *tx_len = attr.tx_token_length;
    *rx_len = attr.rx_token_length;
    return 1;
}

static ucs_status_t query_tx_token(uct_ep_h ep, void *tx_token)
{
    uct_ep_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
    attr.tx_token   = tx_token;
    return uct_ep_query(ep, &attr);
}

static ucs_status_t query_rx_token(struct end *receiver, const void *tx_token, void *rx_token)
{
    uct_iface_attr_v2_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    attr.tx_token   = tx_token;
    attr.rx_token   = rx_token;
    return uct_iface_query_v2(receiver->iface, &attr);
}

/* The RX token for ep's connection (malloc'ed, sized by the queried length). */
static void *rx_token_for(uct_ep_h ep, struct end *sender, struct end *receiver)
{
    size_t tx_len = 0, rx_len = 0;
    void *tx, *rx;
    if (!token_lengths(sender, &tx_len, &rx_len)) {
        return NULL;
    }
    tx = calloc(1, tx_len);
    rx = calloc(1, rx_len);
    if (query_tx_token(ep, tx) != UCS_OK || query_rx_token(receiver, tx, rx) != UCS_OK) {
        free(rx);
        rx = NULL;
    }
    free(tx);
    return rx;
}

static void count_op(const uct_ep_op_info_t *op_info, void *arg)
{
    (void)op_info;
    ++*(int *)arg;
}

static ucs_status_t purge(uct_ep_h ep, const void *rx_token, int *reported)
{
    uct_ep_outstanding_purge_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB |
                        UCT_EP_OUTSTANDING_FIELD_ARG;
    params.rx_token = rx_token;
    params.cb       = count_op;
    params.arg      = reported;
    return uct_ep_outstanding_purge(ep, &params);
}

static ucs_status_t invalidate_plain(uct_ep_h ep, int null_params)
{
    invalidate_params_t params;
    memset(&params, 0, sizeof(params));
    return uct_ep_invalidate(ep, null_params ? NULL :
                                               (const uct_ep_invalidate_params_t *)&params);
}

static size_t pack_byte(void *dest, void *arg)
{
    (void)arg;
    *(uint8_t *)dest = 0;
    return 1;
}

static ucs_status_t on_error(void *arg, uct_ep_h ep, ucs_status_t status)
{
    struct end *e     = arg;
    struct handler *h = &e->handler;
    h->calls++;
    h->status = status;
    /* test_peer_failure's err_cb: pending requests are no longer sent. */
    uct_ep_pending_purge(ep, purge_pending_cb, h);
    if (h->purge_inside) {
        void *rx;
#ifndef FAILOVER_MASTER_LAYOUT
        uct_ep_invalidate_params_t params;
        /* 11810: the handler takes the ops over, then purges them. */
        params.field_mask = UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS;
        params.flags      = UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS;
        if (uct_ep_invalidate(ep, &params) != UCS_OK) {
            h->purge_status = UCS_ERR_INVALID_PARAM;
            return UCS_OK;
        }
#endif
        rx              = rx_token_for(ep, e, h->peer);
        h->purge_status = rx != NULL ? purge(ep, rx, &h->purged_ops) : UCS_ERR_NO_ELEM;
        free(rx);
        return h->purge_status;
    }
    return h->answer;
}

/* ------------------------------------------------------------------ cases */

struct pair {
    struct end a, b;
    uct_ep_h ep_a, ep_b;
};

static int open_pair(struct pair *p)
{
    memset(p, 0, sizeof(*p));
    return open_end(&p->a, "mlx5_0", "mlx5_0:1") && open_end(&p->b, "mlx5_1", "mlx5_1:1") &&
           connect_pair(&p->a, &p->b, &p->ep_a, &p->ep_b);
}

static void close_pair(struct pair *p)
{
    uct_soft_hca_drop_next("mlx5_0", 0);
    spin(&p->a, &p->b, 50);
    uct_ep_destroy(p->ep_a);
    uct_ep_destroy(p->ep_b);
    close_end(&p->a);
    close_end(&p->b);
}

/* test_ib_mlx5_ext.iface_query: TX_TOKEN alone is refused; the full token
 * query answers the capability, both lengths and the RX token. */
static int case_ext_iface_query(struct pair *p)
{
    uct_iface_attr_v2_t attr;
    size_t tx_len = 0, rx_len = 0;
    uint8_t *tx, *rx;
    int ok;

    if (!check(token_lengths(&p->a, &tx_len, &rx_len), "no token capability")) {
        return 0;
    }
    tx = calloc(1, tx_len);
    rx = calloc(1, rx_len);
    ok = EXPECT_STATUS(UCS_OK, query_tx_token(p->ep_a, tx));
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN;
    attr.tx_token   = tx;
    ok &= EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_iface_query_v2(p->b.iface, &attr));
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH |
                      UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH | UCT_IFACE_ATTR_FIELD_TX_TOKEN |
                      UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    attr.tx_token = tx;
    attr.rx_token = rx;
    ok &= EXPECT_STATUS(UCS_OK, uct_iface_query_v2(p->b.iface, &attr));
    ok &= check(attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN, "QUERY_TOKEN not advertised");
    ok &= check(attr.tx_token_length == tx_len && attr.rx_token_length == rx_len,
                "token lengths differ between queries");
    ok &= check(rx[0] != 0, "the RX token was not written");
    free(tx);
    free(rx);
    return ok;
}

/* test_ib_mlx5_ext.ep_query: TX_TOKEN without a buffer is refused, with
 * one the token is written. */
static int case_ext_ep_query(struct pair *p)
{
    uct_ep_attr_t attr;
    size_t tx_len = 0, rx_len = 0;
    uint8_t *tx;
    int ok;

    if (!check(token_lengths(&p->a, &tx_len, &rx_len), "no token capability")) {
        return 0;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
    ok = EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_query(p->ep_a, &attr));
    tx            = calloc(1, tx_len);
    attr.tx_token = tx;
    ok &= EXPECT_STATUS(UCS_OK, uct_ep_query(p->ep_a, &attr));
    ok &= check(tx[0] != 0, "the TX token was not written");
    free(tx);
    return ok;
}

/* test_ib_mlx5_ext.ep_outstanding_purge: empty params are refused; an
 * outstanding am_bcopy is purged (UCS_OK) and reported to the callback.
 * UCX runs it on a stub provider that reports any op of a live ep; here the
 * AM is lost on the wire and the queue held (NO_COMPLETIONS, or the error
 * handler's UCS_INPROGRESS in the master build), which is what a real
 * provider needs. */
static int case_ext_outstanding_purge(struct pair *p)
{
    uct_ep_outstanding_purge_params_t params;
    int reported = 0, ok;
    void *rx;

    memset(&params, 0, sizeof(params));
    ok = EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_outstanding_purge(p->ep_a, &params));
    uct_soft_hca_drop_next("mlx5_0", 1000);
    ok &= check(uct_ep_am_bcopy(p->ep_a, AM_ID, pack_byte, NULL, 0) == 1,
                "am_bcopy did not take its 1 byte");
#ifdef FAILOVER_MASTER_LAYOUT
    p->a.handler.answer = UCS_INPROGRESS;
    ok &= EXPECT_STATUS(UCS_OK, invalidate_plain(p->ep_a, 1));
    ok &= check(wait_for(&p->a, &p->b, &p->a.handler.calls, 1), "the error handler never ran");
#else
    {
        uct_ep_invalidate_params_t inv = { UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
                                           UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS };
        ok &= EXPECT_STATUS(UCS_OK, uct_ep_invalidate(p->ep_a, &inv));
    }
#endif
    rx = rx_token_for(p->ep_a, &p->a, &p->b);
    ok &= check(rx != NULL, "no RX token");
    if (rx != NULL) {
        ok &= EXPECT_STATUS(UCS_OK, purge(p->ep_a, rx, &reported));
        ok &= check(reported == 1, "callback invoked %d times, UCX expects it invoked", reported);
    }
    free(rx);
    return ok;
}

/* 11810 test_ib_mlx5_ext.err_handler_outstanding_purge: invalidate(ep, 0),
 * an am_bcopy is still taken, the handler runs exactly once and purges
 * inside it (the callback is invoked), and a flush with CANCEL afterwards
 * answers UCS_OK or UCS_INPROGRESS. */
static int case_err_handler_outstanding_purge(struct pair *p)
{
    ucs_status_t status;
    int ok;

#ifdef FAILOVER_MASTER_LAYOUT
    /* Master has no NO_COMPLETIONS to take the ops over inside the
     * handler: the handler answers UCS_INPROGRESS and the purge follows. */
    p->a.handler.answer = UCS_INPROGRESS;
#else
    p->a.handler.purge_inside = 1;
    p->a.handler.peer         = &p->b;
#endif
    ok = EXPECT_STATUS(UCS_OK, uct_ep_invalidate(p->ep_a, NULL));
    ok &= check(uct_ep_am_bcopy(p->ep_a, AM_ID, pack_byte, NULL, 0) == 1,
                "am_bcopy after invalidate did not take its 1 byte");
    ok &= check(wait_for(&p->a, &p->b, &p->a.handler.calls, 1), "the error handler never ran");
#ifdef FAILOVER_MASTER_LAYOUT
    {
        void *rx = rx_token_for(p->ep_a, &p->a, &p->b);
        p->a.handler.purge_status = rx != NULL ? purge(p->ep_a, rx, &p->a.handler.purged_ops)
                                               : UCS_ERR_NO_ELEM;
        free(rx);
    }
#endif
    spin(&p->a, &p->b, 100);
    ok &= check(p->a.handler.calls == 1, "the handler ran %d times", p->a.handler.calls);
    ok &= EXPECT_STATUS(UCS_OK, p->a.handler.purge_status);
    ok &= check(p->a.handler.purged_ops == 1, "purge callback invoked %d times",
                p->a.handler.purged_ops);
    status = uct_ep_flush(p->ep_a, UCT_FLUSH_FLAG_CANCEL, NULL);
    ok &= check(status == UCS_OK || status == UCS_INPROGRESS,
                "flush(CANCEL) after the purge: UCX expects OK or INPROGRESS, got %s",
                ucs_status_string(status));
    return ok;
}

/* test_uct_query.query_token_support, with 11804's expectation for
 * rc_mlx5: QUERY_TOKEN is advertised (master's own test expects no
 * transport to advertise it, as master has no token provider). */
static int case_query_token_support(struct pair *p)
{
    uct_iface_attr_v2_t attr;
    int ok;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS;
    attr.cap.flags  = UINT64_MAX;
    ok = EXPECT_STATUS(UCS_OK, uct_iface_query_v2(p->a.iface, &attr));
    ok &= check((attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN) != 0,
                "rc_mlx5 does not advertise QUERY_TOKEN");
    return ok;
}

static uint32_t be32_at(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* 11804 test_rc_mlx5_token_query.am_short: 10 AMs delivered, then the TX
 * token names the receiving QP and the RX token says 10 packets arrived.
 * UCX reads its token structs' fields; ours are self-describing (README,
 * src/failover/token.rs): responder QPN at byte 48 and next_rcv_psn at 56,
 * big-endian. Both sides start their PSNs at 0 (as UCX's rc_mlx5), so
 * next_rcv_psn counts the packets received. The ep address starts with the
 * QPN, least significant byte first (UCX's rc_mlx5 ep address layout). */
static int case_token_query_am_short(struct pair *p)
{
    const int messages = 10;
    size_t tx_len = 0, rx_len = 0;
    uint8_t *tx, *rx, peer_addr[64];
    uint32_t peer_qpn, delivered;
    ucs_status_t status;
    int i, ok = 1;

    for (i = 0; i < messages; i++) {
        double deadline = now() + WAIT_SECONDS;
        do {
            status = uct_ep_am_short(p->ep_a, AM_ID, (uint64_t)i, NULL, 0);
            if (status == UCS_ERR_NO_RESOURCE) {
                progress(&p->a, &p->b);
            }
        } while (status == UCS_ERR_NO_RESOURCE && now() < deadline);
        ok &= EXPECT_STATUS(UCS_OK, status);
    }
    ok &= check(wait_for(&p->a, &p->b, &p->b.am_received, messages), "AMs did not arrive");
    if (!check(token_lengths(&p->a, &tx_len, &rx_len), "no token capability")) {
        return 0;
    }
    tx = calloc(1, tx_len);
    rx = calloc(1, rx_len);
    ok &= EXPECT_STATUS(UCS_OK, query_tx_token(p->ep_a, tx));
    ok &= EXPECT_STATUS(UCS_OK, query_rx_token(&p->b, tx, rx));
    uct_ep_get_address(p->ep_b, (uct_ep_addr_t *)peer_addr);
    peer_qpn = ((uint32_t)peer_addr[2] << 16) | ((uint32_t)peer_addr[1] << 8) | peer_addr[0];
    ok &= check(tx_len >= 52 && be32_at(tx + 48) == peer_qpn,
                "the TX token names QPN 0x%x, the receiving QP is 0x%x", be32_at(tx + 48),
                peer_qpn);
    delivered = be32_at(rx + 56) & 0xffffff;
    ok &= check(rx_len >= 60 && delivered == (uint32_t)messages,
                "the RX token says %u packets arrived, UCX expects %d", delivered, messages);
    free(tx);
    free(rx);
    return ok;
}

struct pending_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
};

static ucs_status_t pending_send(uct_pending_req_t *self)
{
    struct pending_req *req = (struct pending_req *)self;
    uint64_t data           = 0;
    ucs_status_t status;
    /* As UCX's test: keep the queue busy so the requests stay pending. */
    do {
        status = uct_ep_am_short(req->ep, AM_ID, 0, &data, sizeof(data));
    } while (status == UCS_OK);
    return status;
}

static void purge_pending_cb(uct_pending_req_t *req, void *arg)
{
    (void)req;
    ((struct handler *)arg)->pending_purged++;
}

static int status_is_peer_failure(ucs_status_t status)
{
    return status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_CONNECTION_RESET ||
           status == UCS_ERR_CANCELED;
}

/* Flushes ep until done or deadline (test_peer_failure's flush()). */
static ucs_status_t flush_ep(struct pair *p, uct_ep_h ep)
{
    double deadline = now() + WAIT_SECONDS;
    ucs_status_t status;
    do {
        progress(&p->a, &p->b);
        status = uct_ep_flush(ep, 0, NULL);
    } while ((status == UCS_INPROGRESS || status == UCS_ERR_NO_RESOURCE) && now() < deadline);
    return status;
}

/* test_peer_failure.peer_failure: inject_error is uct_ep_invalidate(ep, 0);
 * a put_short right after still answers UCS_OK; after flushing, the error
 * handler has run with a peer-failure status. */
static int case_peer_failure(struct pair *p)
{
    int ok = EXPECT_STATUS(UCS_OK, invalidate_plain(p->ep_a, 1));
    ok &= EXPECT_STATUS(UCS_OK, uct_ep_put_short(p->ep_a, NULL, 0, 0, 0));
    flush_ep(p, p->ep_a);
    ok &= check(wait_for(&p->a, &p->b, &p->a.handler.calls, 1), "the error handler never ran");
    ok &= check(p->a.handler.calls > 0 && status_is_peer_failure(p->a.handler.status),
                "handler status %s is not a peer failure", ucs_status_string(p->a.handler.status));
    return ok;
}

/* test_peer_failure.purge_failed_peer: fill the send resources, inject the
 * error, queue 64 pending requests (UCS_OK, or UCS_ERR_BUSY while there are
 * resources again); the handler's uct_ep_pending_purge takes every one. */
static int case_purge_failed_peer(struct pair *p)
{
    enum { PENDING = 64 };
    struct pending_req reqs[PENDING];
    uint64_t data   = 0;
    double deadline = now() + WAIT_SECONDS;
    ucs_status_t status;
    int i, added = 0, ok = 1;

    do {
        status = uct_ep_am_short(p->ep_a, AM_ID, 0, &data, sizeof(data));
    } while (status == UCS_OK && now() < deadline);
    ok &= EXPECT_STATUS(UCS_ERR_NO_RESOURCE, status);
    ok &= EXPECT_STATUS(UCS_OK, invalidate_plain(p->ep_a, 0));
    for (i = 0; i < PENDING; i++) {
        reqs[i].ep       = p->ep_a;
        reqs[i].uct.func = pending_send;
        status           = uct_ep_pending_add(p->ep_a, &reqs[i].uct, 0);
        if (status != UCS_OK) {
            ok &= check(i == 0 && status == UCS_ERR_BUSY,
                        "pending_add %d: %s (UCX: UCS_OK, or BUSY for the first)", i,
                        ucs_status_string(status));
            break;
        }
        added++;
    }
    flush_ep(p, p->ep_a);
    ok &= check(wait_for(&p->a, &p->b, &p->a.handler.calls, 1), "the error handler never ran");
    ok &= check(p->a.handler.pending_purged == added,
                "the handler purged %d of %d pending requests", p->a.handler.pending_purged,
                added);
    return ok;
}

/* test_peer_failure.two_pairs_send: fail one pair while sending on a
 * second; the second keeps delivering, one message and many. */
static int case_two_pairs_send(struct pair *p)
{
    struct end c;
    uct_ep_h ep_ac, ep_ca;
    int i, ok = 1;

    if (!check(open_end(&c, "mlx5_1", "mlx5_1:1") && connect_pair(&p->a, &c, &ep_ac, &ep_ca),
               "second pair")) {
        return 0;
    }
    for (i = 0; i < 100; i++) {
        uct_ep_am_short(p->ep_a, AM_ID, 0, NULL, 0);
    }
    ok &= EXPECT_STATUS(UCS_OK, invalidate_plain(p->ep_a, 1));
    uct_ep_am_short(p->ep_a, AM_ID, 0, NULL, 0);
    for (i = 0; i < 200 && ok; i++) {
        int before = c.am_received;
        double deadline = now() + WAIT_SECONDS;
        ucs_status_t status;
        do {
            status = uct_ep_am_short(ep_ac, AM_ID, (uint64_t)i, NULL, 0);
            progress(&p->a, &c);
            uct_worker_progress(p->b.worker);
        } while (status == UCS_ERR_NO_RESOURCE && now() < deadline);
        ok &= EXPECT_STATUS(UCS_OK, status);
        ok &= check(wait_for(&p->a, &c, &c.am_received, before + 1), "AM %d on the second pair", i);
    }
    ok &= check(p->a.handler.calls == 1 && status_is_peer_failure(p->a.handler.status),
                "the failed pair's handler: %d calls, %s", p->a.handler.calls,
                ucs_status_string(p->a.handler.status));
    uct_ep_destroy(ep_ac);
    uct_ep_destroy(ep_ca);
    close_end(&c);
    return ok;
}

/* 11891 test_uct_peer_failure purge_outstanding (and 11836's CI rule):
 * invalidate with empty params, a flush with a completion answers
 * UCS_INPROGRESS, the handler (answering UCS_INPROGRESS) runs, purge with
 * the peer's RX token is UCS_OK, and a second purge is UCS_OK too. */
static int case_purge_outstanding_twice(struct pair *p)
{
    uct_completion_t comp = { NULL, 1, UCS_OK };
    int reported = 0, again = 0, ok;
    void *rx;

    p->a.handler.answer = UCS_INPROGRESS;
    uct_soft_hca_drop_next("mlx5_0", 1000);
    ok = EXPECT_STATUS(UCS_OK, uct_ep_am_short(p->ep_a, AM_ID, 1, NULL, 0));
    ok &= EXPECT_STATUS(UCS_OK, invalidate_plain(p->ep_a, 0));
    ok &= EXPECT_STATUS(UCS_INPROGRESS, uct_ep_flush(p->ep_a, 0, &comp));
    ok &= check(wait_for(&p->a, &p->b, &p->a.handler.calls, 1), "the error handler never ran");
    rx = rx_token_for(p->ep_a, &p->a, &p->b);
    if (!check(rx != NULL, "no RX token")) {
        return 0;
    }
    ok &= EXPECT_STATUS(UCS_OK, purge(p->ep_a, rx, &reported));
    ok &= check(reported >= 1, "the held AM was not reported");
    ok &= EXPECT_STATUS(UCS_OK, purge(p->ep_a, rx, &again));
    ok &= check(again == 0, "the second purge reported %d ops", again);
    free(rx);
    return ok;
}

/* 11810 test_uct_ib_mlx5_ext_outstanding_purge.invalid_params: NULL
 * params, RX_TOKEN or CB alone, a NULL token and a NULL callback are each
 * UCS_ERR_INVALID_PARAM (UCX calls its provider entry with a NULL ep; here
 * the public call on a held ep). */
static int case_purge_invalid_params(struct pair *p)
{
    uct_ep_outstanding_purge_params_t params;
    uint64_t token = 0;
    int ok;

    p->a.handler.answer = UCS_INPROGRESS;
    ok = EXPECT_STATUS(UCS_OK, invalidate_plain(p->ep_a, 1));
    ok &= EXPECT_STATUS(UCS_OK, uct_ep_put_short(p->ep_a, NULL, 0, 0, 0));
    ok &= check(wait_for(&p->a, &p->b, &p->a.handler.calls, 1), "the error handler never ran");
    ok &= EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_outstanding_purge(p->ep_a, NULL));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN;
    params.rx_token   = &token;
    params.cb         = count_op;
    ok &= EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_outstanding_purge(p->ep_a, &params));
    params.field_mask = UCT_EP_OUTSTANDING_FIELD_CB;
    ok &= EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_outstanding_purge(p->ep_a, &params));
    params.field_mask = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB;
    params.rx_token   = NULL;
    ok &= EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_outstanding_purge(p->ep_a, &params));
    params.rx_token = &token;
    params.cb       = NULL;
    ok &= EXPECT_STATUS(UCS_ERR_INVALID_PARAM, uct_ep_outstanding_purge(p->ep_a, &params));
    return ok;
}

struct upstream_case {
    const char *name;
    int (*run)(struct pair *p);
};

static const struct upstream_case cases[] = {
    { "test_ib_mlx5_ext.iface_query", case_ext_iface_query },
    { "test_ib_mlx5_ext.ep_query", case_ext_ep_query },
    { "test_ib_mlx5_ext.ep_outstanding_purge", case_ext_outstanding_purge },
    { "test_ib_mlx5_ext.err_handler_outstanding_purge (11810)",
      case_err_handler_outstanding_purge },
    { "test_uct_query.query_token_support (11804)", case_query_token_support },
    { "test_rc_mlx5_token_query.am_short (11804)", case_token_query_am_short },
    { "test_uct_peer_failure.peer_failure", case_peer_failure },
    { "test_uct_peer_failure.purge_failed_peer", case_purge_failed_peer },
    { "test_uct_peer_failure.two_pairs_send", case_two_pairs_send },
    { "test_uct_peer_failure.purge_outstanding twice (11891, 11836)",
      case_purge_outstanding_twice },
    { "test_uct_ib_mlx5_ext_outstanding_purge.invalid_params (11810)",
      case_purge_invalid_params },
};

int main(int argc, char **argv)
{
    size_t i;
    const char *only = argc > 1 ? argv[1] : NULL;

    setenv("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2", 0);
    printf("upstream failover cases, %s build\n", BUILD_NAME);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pair p;
        int ok;
        if (only != NULL && strstr(cases[i].name, only) == NULL) {
            continue;
        }
        if (!open_pair(&p)) {
            printf("CASE %s ... FAILED: cannot open the two ends\n", cases[i].name);
            failures++;
            continue;
        }
        ok = cases[i].run(&p);
        close_pair(&p);
        printf("CASE %s ... %s\n", cases[i].name, ok ? "ok" : "FAILED");
        fflush(stdout);
        failures += !ok;
    }
    printf("%d case(s) failed\n", failures);
    return failures == 0 ? 0 : 1;
}
