/*
 * uct_bench: UCT transport benchmark between two processes, using only the
 * public UCT API of UCX 1.13 (built against UCX's own headers, so the same
 * binary runs on UCX and, through LD_LIBRARY_PATH, on our library).
 *
 *   uct_bench -t TL -d DEV [-s SCALE] [-m MAX_SIZE] [-P put_short|am_short]
 *
 * The process starts a copy of itself (fork + exec, so that each loads and
 * initializes its libraries afresh: UCX keeps per-process state from load
 * time): the parent is the initiator, the child the target; they exchange
 * addresses over a socketpair and each opens its own interface.
 * Measured (one "RESULT <test> <size> <value> <unit>" line each):
 *   am_short_lat    half round trip of an am_short ping-pong (8-byte header)
 *   am_short_rate   am_short messages per second, target counts them
 *   put_short_rate  8-byte put_short per second, flushed at the end
 *   put_zcopy_bw    put_zcopy bandwidth (MB/s) from 8 B to MAX_SIZE
 * A test the interface does not offer prints "RESULT <test> <size> n/a".
 * -P OP measures only the cost of posting OP (bursts of 16, drained by a
 * flush outside the measurement): "RESULT post_OP 8 <ns> ns/op" and
 * "POSTED <n>", for dividing a callgrind instruction count by.
 * -I SECONDS measures only the CPU an idle connected process burns: both
 * sides connect, then sleep SECONDS without calling progress; "RESULT
 * idle_cpu 0 <percent> %cpu" is the initiator's CPU time (all its threads,
 * the soft HCA's service thread included) over the wall time.
 * SCALE multiplies the iteration counts (default 1).
 */

#include <uct/api/uct.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    AM_PING = 1,
    AM_PONG = 2,
    AM_RATE = 3,
    AM_DONE = 4
};

typedef struct {
    uct_component_h  component;
    uct_md_h         md;
    uct_md_attr_t    md_attr;
    uct_worker_h     worker;
    ucs_async_context_t *async;
    uct_iface_h      iface;
    uct_iface_attr_t iface_attr;
    uct_ep_h         ep;
    int              oob; /* socket to the other process */
} bench_t;

/* Counters the AM handlers advance; read by the progress loops. */
static volatile uint64_t am_received[AM_DONE + 1];

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "uct_bench[%d]: ", (int)getpid()); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            exit(1); \
        } \
    } while (0)

#define CHECK_STATUS(_status, _what) \
    CHECK((_status) == UCS_OK, "%s: %s", _what, ucs_status_string(_status))

/* --- out-of-band exchange ------------------------------------------------ */

static void oob_send(bench_t *b, const void *data, size_t length)
{
    uint64_t len = length;
    CHECK(send(b->oob, &len, sizeof(len), 0) == sizeof(len), "oob send");
    if (length > 0) {
        CHECK(send(b->oob, data, length, 0) == (ssize_t)length, "oob send");
    }
}

/* Receives one message into a new buffer (caller frees). */
static void *oob_recv(bench_t *b, size_t *length_p)
{
    uint64_t len;
    char *buf;
    size_t got = 0;

    CHECK(recv(b->oob, &len, sizeof(len), MSG_WAITALL) == sizeof(len), "oob recv");
    CHECK(len < (1u << 20), "oob message too long");
    buf = malloc(len + 1);
    CHECK(buf != NULL, "out of memory");
    while (got < len) {
        ssize_t r = recv(b->oob, buf + got, len - got, 0);
        CHECK(r > 0, "oob recv");
        got += (size_t)r;
    }
    if (length_p != NULL) {
        *length_p = len;
    }
    return buf;
}

static void oob_barrier(bench_t *b)
{
    char token = 'b';
    CHECK(send(b->oob, &token, 1, 0) == 1, "barrier send");
    CHECK(recv(b->oob, &token, 1, MSG_WAITALL) == 1, "barrier recv");
}

/* A barrier that keeps the worker progressing while it waits, for
 * transports that need the peer's progress to complete a connection. */
static void oob_barrier_progress(bench_t *b)
{
    char token = 'b';
    CHECK(send(b->oob, &token, 1, 0) == 1, "barrier send");
    for (;;) {
        ssize_t r = recv(b->oob, &token, 1, MSG_DONTWAIT);
        if (r == 1) {
            return;
        }
        CHECK((r < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK)), "barrier recv");
        uct_worker_progress(b->worker);
    }
}

/* --- setup ---------------------------------------------------------------- */

static ucs_status_t count_am(void *arg, void *data, size_t length, unsigned flags)
{
    (void)data;
    (void)length;
    (void)flags;
    ++am_received[(uintptr_t)arg];
    return UCS_OK;
}

static int open_iface(bench_t *b, const char *tl, const char *dev)
{
    uct_component_h *components;
    unsigned num_components, c, m, r;
    ucs_status_t status;

    CHECK_STATUS(uct_query_components(&components, &num_components), "uct_query_components");
    for (c = 0; c < num_components; ++c) {
        uct_component_attr_t cattr;
        memset(&cattr, 0, sizeof(cattr));
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        CHECK_STATUS(uct_component_query(components[c], &cattr), "uct_component_query");
        cattr.md_resources = calloc(cattr.md_resource_count + 1, sizeof(*cattr.md_resources));
        CHECK(cattr.md_resources != NULL, "out of memory");
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        CHECK_STATUS(uct_component_query(components[c], &cattr), "uct_component_query");

        for (m = 0; m < cattr.md_resource_count; ++m) {
            uct_md_config_t *md_config;
            uct_tl_resource_desc_t *resources;
            unsigned num_resources;
            uct_md_h md;

            if (uct_md_config_read(components[c], NULL, NULL, &md_config) != UCS_OK) {
                continue;
            }
            status = uct_md_open(components[c], cattr.md_resources[m].md_name, md_config, &md);
            uct_config_release(md_config);
            if (status != UCS_OK) {
                continue;
            }
            if (uct_md_query_tl_resources(md, &resources, &num_resources) != UCS_OK) {
                uct_md_close(md);
                continue;
            }
            for (r = 0; r < num_resources; ++r) {
                uct_iface_config_t *config;
                uct_iface_params_t params;

                if (strcmp(resources[r].tl_name, tl) || strcmp(resources[r].dev_name, dev)) {
                    continue;
                }
                CHECK_STATUS(uct_md_iface_config_read(md, tl, NULL, NULL, &config),
                             "uct_md_iface_config_read");
                memset(&params, 0, sizeof(params));
                params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                              UCT_IFACE_PARAM_FIELD_DEVICE |
                                              UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                                              UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
                params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
                params.mode.device.tl_name  = tl;
                params.mode.device.dev_name = dev;
                status = uct_iface_open(md, b->worker, &params, config, &b->iface);
                uct_config_release(config);
                CHECK_STATUS(status, "uct_iface_open");
                /* Without this a transport may never progress sends/receives. */
                uct_iface_progress_enable(b->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
                CHECK_STATUS(uct_iface_query(b->iface, &b->iface_attr), "uct_iface_query");
                CHECK_STATUS(uct_md_query(md, &b->md_attr), "uct_md_query");
                b->md        = md;
                b->component = components[c];
                uct_release_tl_resource_list(resources);
                free(cattr.md_resources);
                /* The component list stays: component handles are used later. */
                return 0;
            }
            uct_release_tl_resource_list(resources);
            uct_md_close(md);
        }
        free(cattr.md_resources);
    }
    uct_release_component_list(components);
    return -1;
}

static void connect_peer(bench_t *b)
{
    uct_iface_attr_t *attr = &b->iface_attr;
    uct_ep_params_t ep_params;
    void *dev_addr, *iface_addr, *peer_dev, *peer_iface;
    unsigned id;

    for (id = AM_PING; id <= AM_DONE; ++id) {
        CHECK_STATUS(uct_iface_set_am_handler(b->iface, (uint8_t)id, count_am,
                                              (void *)(uintptr_t)id, 0),
                     "uct_iface_set_am_handler");
    }
    dev_addr   = calloc(1, attr->device_addr_len + 1);
    iface_addr = calloc(1, attr->iface_addr_len + 1);
    CHECK((dev_addr != NULL) && (iface_addr != NULL), "out of memory");
    CHECK_STATUS(uct_iface_get_device_address(b->iface, dev_addr), "get device address");
    CHECK_STATUS(uct_iface_get_address(b->iface, iface_addr), "get iface address");
    oob_send(b, dev_addr, attr->device_addr_len);
    oob_send(b, iface_addr, attr->iface_addr_len);
    peer_dev   = oob_recv(b, NULL);
    peer_iface = oob_recv(b, NULL);

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = b->iface;
    /* Connect to the peer's ep where the transport can (as uct_hello_world
     * does): UCX's tcp, for one, only makes progress that way here. */
    if (attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP) {
        void *ep_addr, *peer_ep;
        CHECK_STATUS(uct_ep_create(&ep_params, &b->ep), "uct_ep_create");
        ep_addr = calloc(1, attr->ep_addr_len + 1);
        CHECK(ep_addr != NULL, "out of memory");
        CHECK_STATUS(uct_ep_get_address(b->ep, ep_addr), "uct_ep_get_address");
        oob_send(b, ep_addr, attr->ep_addr_len);
        peer_ep = oob_recv(b, NULL);
        CHECK_STATUS(uct_ep_connect_to_ep(b->ep, peer_dev, peer_ep), "uct_ep_connect_to_ep");
        free(ep_addr);
        free(peer_ep);
    } else {
        CHECK(attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE, "no connection mode");
        ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.dev_addr    = peer_dev;
        ep_params.iface_addr  = peer_iface;
        CHECK_STATUS(uct_ep_create(&ep_params, &b->ep), "uct_ep_create (to iface)");
    }
    oob_barrier_progress(b);
    free(dev_addr);
    free(iface_addr);
    free(peer_dev);
    free(peer_iface);
}

/* Memory the peer writes into: registered if the md registers, allocated
 * by the md if it only allocates (shared-memory transports). */
typedef struct {
    void               *address;
    size_t              length;
    uct_mem_h           memh;
    uct_allocated_memory_t allocated;
    int                 is_allocated;
} region_t;

static int region_create(bench_t *b, size_t length, region_t *region)
{
    memset(region, 0, sizeof(*region));
    region->length = length;
    region->memh   = UCT_MEM_HANDLE_NULL;
    if (b->md_attr.cap.flags & UCT_MD_FLAG_REG) {
        CHECK(posix_memalign(&region->address, 4096, length) == 0, "out of memory");
        memset(region->address, 0, length);
        return (uct_md_mem_reg(b->md, region->address, length, UCT_MD_MEM_ACCESS_ALL,
                               &region->memh) == UCS_OK) ? 0 : -1;
    }
    if (b->md_attr.cap.flags & UCT_MD_FLAG_ALLOC) {
        uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
        uct_mem_alloc_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                            UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE | UCT_MEM_ALLOC_PARAM_FIELD_NAME;
        params.flags      = UCT_MD_MEM_ACCESS_ALL;
        params.mem_type   = UCS_MEMORY_TYPE_HOST;
        params.mds.mds    = &b->md;
        params.mds.count  = 1;
        params.name       = "uct_bench";
        if (uct_mem_alloc(length, &method, 1, &params, &region->allocated) != UCS_OK) {
            return -1;
        }
        region->is_allocated = 1;
        region->address      = region->allocated.address;
        region->memh         = region->allocated.memh;
        return 0;
    }
    return -1;
}

/* --- the measurements ------------------------------------------------------ */

static void result(const char *test, size_t size, double value, const char *unit)
{
    printf("RESULT %s %zu %.6g %s\n", test, size, value, unit);
    fflush(stdout);
}

static void result_na(const char *test, size_t size, const char *why)
{
    printf("RESULT %s %zu n/a %s\n", test, size, why);
    fflush(stdout);
}

static void wait_count(bench_t *b, unsigned id, uint64_t target)
{
    while (am_received[id] < target) {
        uct_worker_progress(b->worker);
    }
}

static void send_am(bench_t *b, unsigned id, uint64_t header)
{
    ucs_status_t status;
    for (;;) {
        status = uct_ep_am_short(b->ep, (uint8_t)id, header, NULL, 0);
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        uct_worker_progress(b->worker);
    }
    CHECK_STATUS(status, "uct_ep_am_short");
}

/* Completion callbacks are mandatory; the flush waits on the count. */
static void ignore_completion(uct_completion_t *self)
{
    (void)self;
}

static void flush_ep(bench_t *b)
{
    uct_completion_t comp;
    ucs_status_t status;

    comp.func   = ignore_completion;
    comp.count  = 1;
    comp.status = UCS_OK;
    for (;;) {
        status = uct_ep_flush(b->ep, 0, &comp);
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        uct_worker_progress(b->worker);
    }
    if (status == UCS_INPROGRESS) {
        while (comp.count > 0) {
            uct_worker_progress(b->worker);
        }
        status = comp.status;
    }
    CHECK_STATUS(status, "uct_ep_flush");
}

static void bench_am_short(bench_t *b, int initiator, unsigned scale)
{
    const uint64_t pings = 2000ull * scale, msgs = 20000ull * scale;
    const uint64_t warmup = 100;
    uint64_t i;
    double start;

    if (!(b->iface_attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT)) {
        if (initiator) {
            result_na("am_short_lat", 8, "no-am_short");
            result_na("am_short_rate", 8, "no-am_short");
        }
        return;
    }

    /* Ping-pong: the target answers each ping from its progress loop. */
    oob_barrier(b);
    start = 0;
    for (i = 0; i < warmup + pings; ++i) {
        if (i == warmup) {
            start = now_sec();
        }
        if (initiator) {
            send_am(b, AM_PING, i);
            wait_count(b, AM_PONG, i + 1);
        } else {
            wait_count(b, AM_PING, i + 1);
            send_am(b, AM_PONG, i);
        }
    }
    if (initiator) {
        result("am_short_lat", 8, (now_sec() - start) / (2.0 * pings) * 1e6, "usec");
    }

    /* Message rate: a stream of am_short, one DONE back at the end. */
    oob_barrier(b);
    if (initiator) {
        start = now_sec();
        for (i = 0; i < msgs; ++i) {
            send_am(b, AM_RATE, i);
        }
        wait_count(b, AM_DONE, am_received[AM_DONE] + 1);
        result("am_short_rate", 8, msgs / (now_sec() - start) / 1e6, "Mmsg/s");
    } else {
        wait_count(b, AM_RATE, msgs);
        send_am(b, AM_DONE, 0);
    }
}

/* The target's region, as the initiator needs it. */
typedef struct {
    uint64_t          address;
    uct_rkey_bundle_t rkey;
    int               valid;
} remote_region_t;

static void exchange_region(bench_t *b, int initiator, region_t *region, int have_region,
                            remote_region_t *remote)
{
    memset(remote, 0, sizeof(*remote));
    if (!initiator) {
        char *packed = calloc(1, b->md_attr.rkey_packed_size + sizeof(uint64_t) + 1);
        uint64_t address = (uint64_t)(uintptr_t)region->address;
        CHECK(packed != NULL, "out of memory");
        if (have_region) {
            memcpy(packed, &address, sizeof(address));
            CHECK_STATUS(uct_md_mkey_pack(b->md, region->memh, packed + sizeof(address)),
                         "uct_md_mkey_pack");
            oob_send(b, packed, sizeof(address) + b->md_attr.rkey_packed_size);
        } else {
            oob_send(b, NULL, 0);
        }
        free(packed);
    } else {
        size_t length;
        char *packed = oob_recv(b, &length);
        if (length >= sizeof(uint64_t)) {
            memcpy(&remote->address, packed, sizeof(uint64_t));
            remote->valid = uct_rkey_unpack(b->component, packed + sizeof(uint64_t),
                                            &remote->rkey) == UCS_OK;
        }
        free(packed);
    }
}

static void bench_put_short(bench_t *b, int initiator, unsigned scale,
                            const remote_region_t *remote)
{
    const uint64_t msgs = 20000ull * scale;
    uint64_t value = 0, i;
    ucs_status_t status;
    double start;

    oob_barrier(b);
    if (!initiator) {
        oob_barrier_progress(b);
        return;
    }
    if (!(b->iface_attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT) || !remote->valid) {
        result_na("put_short_rate", 8, remote->valid ? "no-put_short" : "no-remote-memory");
    } else {
        start = now_sec();
        for (i = 0; i < msgs; ++i) {
            value = i;
            for (;;) {
                status = uct_ep_put_short(b->ep, &value, sizeof(value), remote->address,
                                          remote->rkey.rkey);
                if (status != UCS_ERR_NO_RESOURCE) {
                    break;
                }
                uct_worker_progress(b->worker);
            }
            CHECK((status == UCS_OK) || (status == UCS_INPROGRESS), "uct_ep_put_short: %s",
                  ucs_status_string(status));
        }
        flush_ep(b);
        result("put_short_rate", 8, msgs / (now_sec() - start) / 1e6, "Mmsg/s");
    }
    oob_barrier_progress(b);
}

typedef struct {
    uct_completion_t super;
    volatile int     done;
} counted_completion_t;

static void zcopy_done(uct_completion_t *self)
{
    counted_completion_t *comp = (counted_completion_t *)self;
    CHECK(self->status == UCS_OK, "put_zcopy completed with %s",
          ucs_status_string(self->status));
    comp->done = 1;
}

static void bench_put_zcopy(bench_t *b, int initiator, unsigned scale, size_t max_size,
                            const remote_region_t *remote)
{
    region_t local;
    size_t size;
    int have_local;

    oob_barrier(b);
    if (!initiator) {
        oob_barrier_progress(b);
        return;
    }
    have_local = (b->iface_attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) && remote->valid &&
                 (b->md_attr.cap.flags & UCT_MD_FLAG_REG) &&
                 (region_create(b, max_size, &local) == 0);
    /* 8 B, then x8 steps, always ending at max_size itself. */
    for (size = 8; size <= max_size;
         size = ((size < max_size) && (size * 8 > max_size)) ? max_size : size * 8) {
        const uint64_t total = 64ull * 1024 * 1024 * scale;
        uint64_t iters = total / size, i;
        counted_completion_t comp;
        ucs_status_t status;
        uct_iov_t iov;
        double start;

        if (!have_local) {
            result_na("put_zcopy_bw", size, "no-put_zcopy");
            continue;
        }
        if ((size > b->iface_attr.cap.put.max_zcopy) ||
            (size < b->iface_attr.cap.put.min_zcopy)) {
            result_na("put_zcopy_bw", size, "size-out-of-range");
            continue;
        }
        if (iters < 16) {
            iters = 16;
        } else if (iters > 20000ull * scale) {
            iters = 20000ull * scale;
        }
        iov.buffer = local.address;
        iov.length = size;
        iov.memh   = local.memh;
        iov.stride = 0;
        iov.count  = 1;
        /* One completion for the whole burst: a guard count of 1 keeps it
         * from firing before every post is out. */
        comp.super.func   = zcopy_done;
        comp.super.count  = 1;
        comp.super.status = UCS_OK;
        comp.done         = 0;
        start = now_sec();
        for (i = 0; i < iters; ++i) {
            for (;;) {
                ++comp.super.count;
                status = uct_ep_put_zcopy(b->ep, &iov, 1, remote->address, remote->rkey.rkey,
                                          &comp.super);
                if (status != UCS_INPROGRESS) {
                    --comp.super.count;
                }
                if (status != UCS_ERR_NO_RESOURCE) {
                    break;
                }
                uct_worker_progress(b->worker);
            }
            CHECK((status == UCS_OK) || (status == UCS_INPROGRESS), "uct_ep_put_zcopy: %s",
                  ucs_status_string(status));
        }
        if (--comp.super.count > 0) {
            while (!comp.done) {
                uct_worker_progress(b->worker);
            }
        }
        flush_ep(b);
        result("put_zcopy_bw", size, (double)size * iters / (now_sec() - start) / 1e6,
               "MB/s");
    }
    oob_barrier_progress(b);
}

/* --- posting cost (-P) ------------------------------------------------------ */
/* Posts up to `count` operations back to back and returns how many the
 * transport took before it ran out of resources. Kept out of line so that
 * `valgrind --tool=callgrind --toggle-collect=<this function>` counts the
 * instructions of the posts alone (run.sh -P does that). */
__attribute__((noinline)) unsigned post_burst_put_short(bench_t *b, const remote_region_t *remote,
                                                        const uint64_t *value, unsigned count)
{
    unsigned i;
    for (i = 0; i < count; ++i) {
        if (uct_ep_put_short(b->ep, value, sizeof(*value), remote->address,
                             remote->rkey.rkey) != UCS_OK) {
            break;
        }
    }
    return i;
}

__attribute__((noinline)) unsigned post_burst_am_short(bench_t *b, unsigned count)
{
    unsigned i;
    for (i = 0; i < count; ++i) {
        if (uct_ep_am_short(b->ep, AM_RATE, i, NULL, 0) != UCS_OK) {
            break;
        }
    }
    return i;
}

static void bench_post_cost(bench_t *b, int initiator, unsigned scale, const char *op,
                            const remote_region_t *remote)
{
    const uint64_t wanted = 20000ull * scale;
    const unsigned burst  = 16;
    int is_put            = !strcmp(op, "put_short");
    uint64_t posted = 0, value = 42;
    double elapsed  = 0, start;
    unsigned n;

    oob_barrier(b);
    if (!initiator) {
        oob_barrier_progress(b);
        return;
    }
    CHECK(is_put || !strcmp(op, "am_short"), "-P takes put_short or am_short");
    if (is_put && (!(b->iface_attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT) || !remote->valid)) {
        result_na("post_put_short", 8, "no-put_short");
    } else if (!is_put && !(b->iface_attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT)) {
        result_na("post_am_short", 8, "no-am_short");
    } else {
        while (posted < wanted) {
            start = now_sec();
            n     = is_put ? post_burst_put_short(b, remote, &value, burst) :
                             post_burst_am_short(b, burst);
            elapsed += now_sec() - start;
            posted  += n;
            /* Drain outside the measured function: completions, credits. */
            flush_ep(b);
            if (n < burst) {
                /* Out of a resource the flush does not bring back (rc flow
                 * control: the peer's grant arrives as a receive). */
                uct_worker_progress(b->worker);
            }
        }
        result(is_put ? "post_put_short" : "post_am_short", 8, elapsed / posted * 1e9,
               "ns/op");
        printf("POSTED %" PRIu64 "\n", posted);
    }
    oob_barrier_progress(b);
}

static double cpu_sec(void)
{
    struct rusage usage;
    CHECK(getrusage(RUSAGE_SELF, &usage) == 0, "getrusage");
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
           (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

/* Connected and idle: neither side progresses; the CPU is the device's. */
static void bench_idle_cpu(bench_t *b, int initiator, unsigned seconds)
{
    double wall, cpu;

    oob_barrier(b);
    wall = now_sec();
    cpu  = cpu_sec();
    sleep(seconds);
    cpu  = cpu_sec() - cpu;
    wall = now_sec() - wall;
    if (initiator) {
        result("idle_cpu", 0, cpu / wall * 100.0, "%cpu");
    }
    oob_barrier(b);
}

/* --- main ------------------------------------------------------------------ */

static unsigned idle_seconds; /* -I */

static void run(int oob, int initiator, const char *tl, const char *dev, unsigned scale,
                size_t max_size, const char *post_op)
{
    bench_t b;
    region_t region;
    remote_region_t remote;
    int have_region = 0;

    memset(&b, 0, sizeof(b));
    b.oob = oob;
    CHECK_STATUS(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &b.async),
                 "ucs_async_context_create");
    CHECK_STATUS(uct_worker_create(b.async, UCS_THREAD_MODE_SINGLE, &b.worker),
                 "uct_worker_create");
    CHECK(open_iface(&b, tl, dev) == 0, "no resource %s/%s", tl, dev);
    connect_peer(&b);
    if (!initiator) {
        have_region = region_create(&b, max_size, &region) == 0;
    }
    exchange_region(&b, initiator, &region, have_region, &remote);

    if (idle_seconds > 0) {
        bench_idle_cpu(&b, initiator, idle_seconds);
    } else if (post_op != NULL) {
        bench_post_cost(&b, initiator, scale, post_op, &remote);
    } else {
        bench_am_short(&b, initiator, scale);
        bench_put_short(&b, initiator, scale, &remote);
        bench_put_zcopy(&b, initiator, scale, max_size, &remote);
    }

    oob_barrier_progress(&b);
    uct_ep_destroy(b.ep);
    uct_iface_close(b.iface);
    uct_worker_destroy(b.worker);
    ucs_async_context_destroy(b.async);
}

int main(int argc, char **argv)
{
    const char *tl = NULL, *dev = NULL;
    unsigned scale  = 1;
    size_t max_size = 1024 * 1024;
    int fds[2], c, status;
    pid_t child;

    int target_fd       = -1;
    const char *post_op = NULL;
    char fd_arg[16], scale_arg[16], size_arg[32], idle_arg[16];

    while ((c = getopt(argc, argv, "t:d:s:m:P:I:T:h")) != -1) {
        switch (c) {
        case 't':
            tl = optarg;
            break;
        case 'd':
            dev = optarg;
            break;
        case 's':
            scale = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'm':
            max_size = strtoull(optarg, NULL, 0);
            break;
        case 'P':
            post_op = optarg;
            break;
        case 'I':
            idle_seconds = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'T': /* internal: run as the target on this socket */
            target_fd = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: uct_bench -t TL -d DEV [-s SCALE] [-m MAX_SIZE] [-P OP]\n");
            return 2;
        }
    }
    if ((tl == NULL) || (dev == NULL) || (scale == 0) || (max_size < 8)) {
        fprintf(stderr, "usage: uct_bench -t TL -d DEV [-s SCALE] [-m MAX_SIZE]\n");
        return 2;
    }
    if (target_fd >= 0) {
        run(target_fd, 0, tl, dev, scale, max_size, post_op);
        return 0;
    }

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
    child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        close(fds[0]);
        snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
        snprintf(scale_arg, sizeof(scale_arg), "%u", scale);
        snprintf(size_arg, sizeof(size_arg), "%zu", max_size);
        snprintf(idle_arg, sizeof(idle_arg), "%u", idle_seconds);
        /* argv[0] rather than /proc/self/exe: under valgrind the latter is
         * the valgrind tool, and the target should run natively. */
        execl(strchr(argv[0], '/') ? argv[0] : "/proc/self/exe", argv[0], "-T", fd_arg, "-t", tl, "-d", dev, "-s", scale_arg,
              "-m", size_arg, "-I", idle_arg, post_op ? "-P" : (char *)NULL, post_op, (char *)NULL);
        fprintf(stderr, "uct_bench: exec of the target failed: %s\n", strerror(errno));
        _exit(1);
    }
    close(fds[1]);
    run(fds[0], 1, tl, dev, scale, max_size, post_op);
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0), "the target process failed");
    return 0;
}
