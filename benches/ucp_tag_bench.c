/*
 * UCP tagged-message latency and bandwidth between two processes, wired up
 * through a connection manager (sockaddr), for benches/ucp_bench.sh. Built
 * against the system's UCX headers and libucp; which libuct serves it is
 * the caller's choice (ours preloaded, or UCX's own with UCX_TLS=tcp / sm).
 *
 *   ucp_tag_bench server IP PORT       (PORT 0: any; prints the port)
 *   ucp_tag_bench client IP PORT [SCALE]
 *
 * With UCP_TAG_BENCH_WIREUP=address the two sides swap worker addresses over
 * a TCP socket on IP:PORT instead and each opens an ep to the other's
 * address (UCX 1.13 puts shared-memory lanes only on such eps; our rc_mlx5
 * cannot be wired that way without an auxiliary transport).
 *
 * The client prints one line per figure:
 *   tag_lat 8 <one-way latency, usec>     8 B ping-pong, half the round trip
 *   tag_bw <size> <MB/s>                  a window of sends, then one reply
 * Exit 1 with a line starting with "FAIL" on any error or timeout.
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UCP_WAIT_SECONDS 60.0
#define WINDOW 16
#define TAG_PING 1
#define TAG_PONG 2
#define TAG_DATA 3
#define TAG_DONE 4
#define LAT_SIZE 8

static const size_t bw_sizes[] = {64 * 1024, 1024 * 1024};
#define N_BW_SIZES (sizeof(bw_sizes) / sizeof(bw_sizes[0]))

#include "../c-tests/common/ucp_wait.h" /* fail, now, wait_request, make_address */

/* Iteration counts for each size, the same on both sides. */
static unsigned lat_iterations(unsigned scale) { return 20000 * scale; }

static unsigned bw_iterations(size_t size, unsigned scale)
{
    return (size >= 1024 * 1024 ? 200 : 2000) * scale;
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    /* The peer's close ends every run: only a failure before that matters,
     * and it shows as a request error or a timeout. */
    (void)status;
}

static void *send_nb(ucp_ep_h ep, void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t param = {0};
    return ucp_tag_send_nbx(ep, buf, len, tag, &param);
}

static void *recv_nb(ucp_worker_h worker, void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t param = {0};
    return ucp_tag_recv_nbx(worker, buf, len, tag, UINT64_MAX, &param);
}

/* Waits for the oldest of a window of requests. */
static void wait_window(ucp_worker_h worker, void **window, unsigned count, const char *what)
{
    for (unsigned i = 0; i < count; i++) {
        wait_request(worker, window[i], what);
    }
}

/* Streams `iterations` messages of `size` one way with WINDOW in flight. */
static void stream(ucp_worker_h worker, ucp_ep_h ep, uint8_t *buf, size_t size,
                   unsigned iterations, int sending)
{
    void *window[WINDOW];
    unsigned in_flight = 0;
    for (unsigned i = 0; i < iterations; i++) {
        window[in_flight++] = sending ? send_nb(ep, buf, size, TAG_DATA)
                                      : recv_nb(worker, buf, size, TAG_DATA);
        if (in_flight == WINDOW) {
            wait_window(worker, window, in_flight, sending ? "bw send" : "bw receive");
            in_flight = 0;
        }
    }
    wait_window(worker, window, in_flight, sending ? "bw send" : "bw receive");
}

static void run(ucp_worker_h worker, ucp_ep_h ep, int client, unsigned scale)
{
    uint8_t small[LAT_SIZE] = {0};
    unsigned iterations = lat_iterations(scale);
    /* Warm-up round trips, then the measured ones. */
    for (int measured = 0; measured < 2; measured++) {
        unsigned count = measured ? iterations : iterations / 10 + 1;
        double start = now();
        for (unsigned i = 0; i < count; i++) {
            if (client) {
                wait_request(worker, send_nb(ep, small, LAT_SIZE, TAG_PING), "ping");
                wait_request(worker, recv_nb(worker, small, LAT_SIZE, TAG_PONG), "pong");
            } else {
                wait_request(worker, recv_nb(worker, small, LAT_SIZE, TAG_PING), "ping");
                wait_request(worker, send_nb(ep, small, LAT_SIZE, TAG_PONG), "pong");
            }
        }
        if (client && measured) {
            printf("tag_lat %d %.3f\n", LAT_SIZE, (now() - start) / count / 2 * 1e6);
        }
    }

    uint8_t *buf = calloc(1, bw_sizes[N_BW_SIZES - 1]);
    if (buf == NULL) {
        fail("out of memory");
    }
    for (unsigned s = 0; s < N_BW_SIZES; s++) {
        size_t size = bw_sizes[s];
        unsigned count = bw_iterations(size, scale);
        double start = now();
        stream(worker, ep, buf, size, count, client);
        /* The receiver's reply says every byte arrived. */
        if (client) {
            wait_request(worker, recv_nb(worker, small, 1, TAG_DONE), "bw done");
            printf("tag_bw %zu %.1f\n", size, (double)size * count / (now() - start) / 1e6);
        } else {
            wait_request(worker, send_nb(ep, small, 1, TAG_DONE), "bw done");
        }
    }
    free(buf);

    /* Both sides have seen the last reply: nothing is in flight. */
    wait_request(worker,
                 client ? send_nb(ep, small, 1, TAG_DONE) : recv_nb(worker, small, 1, TAG_DONE),
                 "final");
    fflush(stdout);
}

static ucp_conn_request_h pending_request;

static void on_connection(ucp_conn_request_h request, void *arg)
{
    (void)arg;
    pending_request = request;
}

static void close_ep(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void *req = ucp_ep_close_nbx(ep, &param);
    if (req != NULL && !UCS_PTR_IS_ERR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
    }
}

static void exchange(int fd, void *out, size_t out_len, void *in, size_t in_len)
{
    if (out_len && send(fd, out, out_len, MSG_NOSIGNAL) != (ssize_t)out_len) {
        fail("address exchange: send");
    }
    for (size_t got = 0; got < in_len;) {
        ssize_t n = recv(fd, (char *)in + got, in_len - got, 0);
        if (n <= 0) {
            fail("address exchange: the peer closed");
        }
        got += (size_t)n;
    }
}

/* Swaps worker addresses over TCP; returns an ep to the peer's worker. */
static ucp_ep_h connect_by_address(ucp_worker_h worker, struct sockaddr_in *address, int client,
                                   ucp_ep_params_t *ep_params)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        fail("socket");
    }
    if (client) {
        if (connect(fd, (struct sockaddr *)address, sizeof(*address)) != 0) {
            fail("connect to the server's port");
        }
    } else {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        socklen_t len = sizeof(*address);
        if (bind(fd, (struct sockaddr *)address, len) != 0 || listen(fd, 1) != 0 ||
            getsockname(fd, (struct sockaddr *)address, &len) != 0) {
            fail("listen");
        }
        printf("listening on port %u\n", ntohs(address->sin_port));
        fflush(stdout);
        int peer = accept(fd, NULL, NULL);
        if (peer < 0) {
            fail("accept");
        }
        close(fd);
        fd = peer;
    }
    ucp_address_t *own;
    size_t own_len;
    ucs_status_t status = ucp_worker_get_address(worker, &own, &own_len);
    if (status != UCS_OK) {
        fail("ucp_worker_get_address: %s", ucs_status_string(status));
    }
    uint64_t lengths[2] = {own_len, 0};
    exchange(fd, &lengths[0], sizeof(lengths[0]), &lengths[1], sizeof(lengths[1]));
    void *remote = malloc(lengths[1]);
    if (remote == NULL) {
        fail("out of memory");
    }
    exchange(fd, own, own_len, remote, lengths[1]);
    ucp_worker_release_address(worker, own);
    /* UCX 1.13's shared memory has no peer failure handling. */
    ep_params->err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ep_params->field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params->address = remote;
    ucp_ep_h ep;
    status = ucp_ep_create(worker, ep_params, &ep);
    if (status != UCS_OK) {
        fail("ucp_ep_create: %s", ucs_status_string(status));
    }
    free(remote);
    close(fd);
    return ep;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: %s server|client IP PORT [SCALE]\n", argv[0]);
        return 2;
    }
    ucp_wait_role = argv[1];
    int client = strcmp(ucp_wait_role, "client") == 0;
    unsigned scale = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 1;
    if (scale == 0) {
        fail("SCALE must be at least 1");
    }
    struct sockaddr_in address = make_address(argv[2], argv[3]);

    ucp_params_t params = {0};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    ucp_context_h context;
    ucs_status_t status = ucp_init(&params, NULL, &context);
    if (status != UCS_OK) {
        fail("ucp_init: %s", ucs_status_string(status));
    }
    ucp_worker_params_t wparams = {0};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucp_worker_h worker;
    status = ucp_worker_create(context, &wparams, &worker);
    if (status != UCS_OK) {
        fail("ucp_worker_create: %s", ucs_status_string(status));
    }

    ucp_ep_params_t ep_params = {0};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = on_ep_error;
    ucp_listener_h listener = NULL;
    const char *wireup = getenv("UCP_TAG_BENCH_WIREUP");
    ucp_ep_h ep;
    if (wireup != NULL && strcmp(wireup, "address") == 0) {
        ep = connect_by_address(worker, &address, client, &ep_params);
        goto connected;
    }
    if (client) {
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
        ep_params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        ep_params.sockaddr.addr = (struct sockaddr *)&address;
        ep_params.sockaddr.addrlen = sizeof(address);
    } else {
        ucp_listener_params_t lparams = {0};
        lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lparams.sockaddr.addr = (struct sockaddr *)&address;
        lparams.sockaddr.addrlen = sizeof(address);
        lparams.conn_handler.cb = on_connection;
        status = ucp_listener_create(worker, &lparams, &listener);
        if (status != UCS_OK) {
            fail("ucp_listener_create: %s", ucs_status_string(status));
        }
        ucp_listener_attr_t attr = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
        status = ucp_listener_query(listener, &attr);
        if (status != UCS_OK) {
            fail("ucp_listener_query: %s", ucs_status_string(status));
        }
        printf("listening on port %u\n",
               ntohs(((struct sockaddr_in *)&attr.sockaddr)->sin_port));
        fflush(stdout);
        double deadline = now() + UCP_WAIT_SECONDS;
        while (pending_request == NULL) {
            ucp_worker_progress(worker);
            if (now() > deadline) {
                fail("no connection request after %.0f s", UCP_WAIT_SECONDS);
            }
        }
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
        ep_params.conn_request = pending_request;
    }
    status = ucp_ep_create(worker, &ep_params, &ep);
    if (status != UCS_OK) {
        fail("ucp_ep_create: %s", ucs_status_string(status));
    }

connected:
    run(worker, ep, client, scale);

    close_ep(worker, ep);
    if (listener != NULL) {
        ucp_listener_destroy(listener);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return 0;
}
