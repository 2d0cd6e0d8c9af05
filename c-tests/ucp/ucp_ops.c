/*
 * A UCP client-server program of ours (issue 24 point 5), built against
 * Debian's UCX 1.13 headers and libucp, run with our libuct preloaded.
 *
 *   ucp_ops server IP PORT        listens (PORT 0: any), prints
 *                                 "listening on port N", serves two rounds
 *   ucp_ops client IP PORT [--corrupt tag|put|get|atomic]
 *
 * Each round is one endpoint opened with a sockaddr (the connection
 * manager's wire-up). In it:
 *   - the server sends its buffer's address and packed rkey in a tag message;
 *   - tagged send/recv both ways at 8 B, 64 KiB and 1 MiB, content checked;
 *   - the client puts into and gets from the server's buffer (8 B, 64 KiB,
 *     1 MiB), checking what it reads back and what the server filled in;
 *   - 64-bit atomics ADD, SWAP and CSWAP (a matching and a failing compare)
 *     on one word of that buffer, every fetched value checked;
 *   - the server checks the last put and the final atomic word itself and
 *     sends its verdict;
 *   - the client closes: round 0 with ucp_ep_close_nbx in flush mode, round
 *     1 with UCP_EP_CLOSE_FLAG_FORCE. The server waits for the peer's
 *     disconnect on its endpoint, then closes it.
 *
 * Every wait has a deadline; any mismatch, error or timeout prints one line
 * starting with "FAIL" and exits 1. --corrupt alters one expected value on
 * the client so that a test can show the checks do fail.
 */
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 2
#define UCP_WAIT_SECONDS 30.0
#define MIB (1024 * 1024)
/* Server buffer: put target [0, 1 MiB), server pattern for gets
 * [1 MiB, 2 MiB), the atomic word at ATOMIC_OFFSET. */
#define PUT_OFFSET 0
#define GET_OFFSET MIB
#define ATOMIC_OFFSET (2 * MIB)
#define SERVER_BUFFER_SIZE (2 * MIB + 64)
#define ATOMIC_INITIAL UINT64_C(0x1122334455660000)
#define ATOMIC_ADD UINT64_C(0x10)
#define ATOMIC_SWAP UINT64_C(0x0badc0ffee000001)
#define ATOMIC_CSWAP UINT64_C(0x00000000cafef00d)

static const size_t sizes[] = {8, 64 * 1024, MIB};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

#include "../common/ucp_wait.h" /* fail, now, wait_request, make_address */

enum message_kind {
    MSG_RKEY = 1,
    MSG_CLIENT_DATA = 2,
    MSG_SERVER_DATA = 3,
    MSG_DONE = 4,
    MSG_VERDICT = 5,
};

static const char *corrupt = "";

/* One tag per round, kind and size index, so that nothing of one step
 * can match another step's receive. */
static ucp_tag_t make_tag(int round, enum message_kind kind, unsigned index)
{
    return ((ucp_tag_t)round << 40) | ((ucp_tag_t)kind << 32) | index;
}

/* Content that differs per round, direction/purpose (seed) and offset. */
static uint8_t pattern_byte(unsigned seed, size_t i)
{
    return (uint8_t)(seed * 37u + i * 131u + (i >> 9) * 7u + 1u);
}

static void fill(void *buf, size_t len, unsigned seed)
{
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i++) {
        b[i] = pattern_byte(seed, i);
    }
}

static void check(const char *what, const void *buf, size_t len, unsigned seed)
{
    const uint8_t *b = buf;
    int flip = (strcmp(corrupt, what) == 0);
    for (size_t i = 0; i < len; i++) {
        uint8_t want = pattern_byte(seed, i);
        if (flip && i == len - 1) {
            want ^= 0xff;
        }
        if (b[i] != want) {
            fail("%s content mismatch (%zu bytes): byte %zu is 0x%02x, expected 0x%02x", what,
                 len, i, b[i], want);
        }
    }
}

static void check_u64(const char *what, uint64_t got, uint64_t want)
{
    if (strcmp(corrupt, "atomic") == 0) {
        want ^= 1;
    }
    if (got != want) {
        fail("%s: got 0x%016" PRIx64 ", expected 0x%016" PRIx64, what, got, want);
    }
}

struct peer {
    ucp_ep_h ep;
    ucs_status_t error; /* set by the error callback */
    int failed;
};

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct peer *peer = arg;
    (void)ep;
    peer->error = status;
    peer->failed = 1;
}

static void send_tag(ucp_worker_h worker, ucp_ep_h ep, const void *buf, size_t len,
                     ucp_tag_t tag, const char *what)
{
    ucp_request_param_t param = {0};
    wait_request(worker, ucp_tag_send_nbx(ep, buf, len, tag, &param), what);
}

/* Receives exactly `len` bytes with `tag`. */
static void recv_tag(ucp_worker_h worker, void *buf, size_t len, ucp_tag_t tag,
                     const char *what)
{
    ucp_request_param_t param = {0};
    void *req = ucp_tag_recv_nbx(worker, buf, len, tag, UINT64_MAX, &param);
    if (UCS_PTR_IS_ERR(req)) {
        fail("%s: receive: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
    }
    double deadline = now() + UCP_WAIT_SECONDS;
    ucp_tag_recv_info_t info;
    ucs_status_t status;
    while ((status = ucp_tag_recv_request_test(req, &info)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if (now() > deadline) {
            fail("%s: nothing received after %.0f s", what, UCP_WAIT_SECONDS);
        }
    }
    ucp_request_free(req);
    if (status != UCS_OK) {
        fail("%s: receive: %s", what, ucs_status_string(status));
    }
    if (info.length != len) {
        fail("%s: received %zu bytes, expected %zu", what, info.length, len);
    }
}

static void flush_ep(ucp_worker_h worker, ucp_ep_h ep, const char *what)
{
    ucp_request_param_t param = {0};
    wait_request(worker, ucp_ep_flush_nbx(ep, &param), what);
}

static void close_ep(ucp_worker_h worker, ucp_ep_h ep, int force, const char *what)
{
    ucp_request_param_t param = {0};
    if (force) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    wait_request(worker, ucp_ep_close_nbx(ep, &param), what);
}

static void init_ucp(ucp_context_h *context, ucp_worker_h *worker)
{
    ucp_params_t params = {0};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    ucs_status_t status = ucp_init(&params, NULL, context);
    if (status != UCS_OK) {
        fail("ucp_init: %s", ucs_status_string(status));
    }
    ucp_worker_params_t wparams = {0};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(*context, &wparams, worker);
    if (status != UCS_OK) {
        fail("ucp_worker_create: %s", ucs_status_string(status));
    }
}

/* What the server sends first: where its buffer is, then the packed rkey. */
struct rkey_header {
    uint64_t address;
    uint64_t rkey_size;
};

/* ------------------------------------------------------------ server */

static ucp_conn_request_h pending_request;
static ucp_listener_h listener;

static void on_connection(ucp_conn_request_h request, void *arg)
{
    (void)arg;
    if (pending_request != NULL) {
        /* One client at a time: a second request is refused. */
        ucp_listener_reject(listener, request);
        return;
    }
    pending_request = request;
}

static void server_round(ucp_worker_h worker, int round, uint8_t *buffer, void *rkey_buffer,
                         size_t rkey_size)
{
    double deadline = now() + UCP_WAIT_SECONDS;
    while (pending_request == NULL) {
        ucp_worker_progress(worker);
        if (now() > deadline) {
            fail("round %d: no connection request after %.0f s", round, UCP_WAIT_SECONDS);
        }
    }
    struct peer peer = {0};
    ucp_ep_params_t ep_params = {0};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.conn_request = pending_request;
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = on_ep_error;
    ep_params.err_handler.arg = &peer;
    ucs_status_t status = ucp_ep_create(worker, &ep_params, &peer.ep);
    pending_request = NULL;
    if (status != UCS_OK) {
        fail("round %d: ucp_ep_create from the connection request: %s", round,
             ucs_status_string(status));
    }

    /* Fresh contents for this round: put target zeroed, get source and the
     * atomic word known. */
    memset(buffer + PUT_OFFSET, 0, MIB);
    fill(buffer + GET_OFFSET, MIB, 200 + round);
    uint64_t initial = ATOMIC_INITIAL + round;
    memcpy(buffer + ATOMIC_OFFSET, &initial, sizeof(initial));

    size_t message_size = sizeof(struct rkey_header) + rkey_size;
    uint8_t *message = malloc(message_size);
    struct rkey_header header = {(uint64_t)(uintptr_t)buffer, rkey_size};
    memcpy(message, &header, sizeof(header));
    memcpy(message + sizeof(header), rkey_buffer, rkey_size);
    send_tag(worker, peer.ep, message, message_size, make_tag(round, MSG_RKEY, 0),
             "send rkey");
    free(message);

    uint8_t *data = malloc(MIB);
    for (unsigned i = 0; i < NSIZES; i++) {
        char what[64];
        snprintf(what, sizeof(what), "tag client->server %zu B", sizes[i]);
        memset(data, 0, sizes[i]);
        recv_tag(worker, data, sizes[i], make_tag(round, MSG_CLIENT_DATA, i), what);
        check(what, data, sizes[i], 10 * round + i);
        snprintf(what, sizeof(what), "tag server->client %zu B", sizes[i]);
        fill(data, sizes[i], 100 + 10 * round + i);
        send_tag(worker, peer.ep, data, sizes[i], make_tag(round, MSG_SERVER_DATA, i), what);
    }
    free(data);

    /* The client is done with RMA and atomics (it flushed): check what
     * landed here. */
    uint64_t done;
    recv_tag(worker, &done, sizeof(done), make_tag(round, MSG_DONE, 0), "receive done");
    /* A mismatch here is reported to the client too, so that it fails at
     * once rather than at its deadline. */
    uint64_t verdict = UCS_OK;
    unsigned put_seed = 50 + 10 * round + NSIZES - 1;
    for (size_t i = 0; i < MIB; i++) {
        if (buffer[PUT_OFFSET + i] != pattern_byte(put_seed, i)) {
            fprintf(stderr, "FAIL server: round %d: the client's last put: byte %zu is 0x%02x, "
                    "expected 0x%02x\n", round, i, buffer[PUT_OFFSET + i],
                    pattern_byte(put_seed, i));
            verdict = UCS_ERR_IO_ERROR;
            break;
        }
    }
    uint64_t word;
    memcpy(&word, buffer + ATOMIC_OFFSET, sizeof(word));
    if (word != ATOMIC_CSWAP) {
        fprintf(stderr, "FAIL server: round %d: atomic word is 0x%016" PRIx64 " after the "
                "client's atomics, expected 0x%016" PRIx64 "\n", round, word, ATOMIC_CSWAP);
        verdict = UCS_ERR_IO_ERROR;
    }
    send_tag(worker, peer.ep, &verdict, sizeof(verdict), make_tag(round, MSG_VERDICT, 0),
             "send verdict");
    if (verdict != UCS_OK) {
        fail("round %d: the client's put or atomics did not land as expected", round);
    }

    /* The client closes (flush or force); its disconnect reaches this
     * endpoint as an error. */
    deadline = now() + UCP_WAIT_SECONDS;
    while (!peer.failed) {
        ucp_worker_progress(worker);
        if (now() > deadline) {
            fail("round %d: the client's close did not reach the server's endpoint in %.0f s",
                 round, UCP_WAIT_SECONDS);
        }
    }
    printf("round %d: peer closed (%s)\n", round, ucs_status_string(peer.error));
    close_ep(worker, peer.ep, 1, "server close");
    printf("round %d: server OK\n", round);
    fflush(stdout);
}

static int run_server(const char *ip, const char *port)
{
    ucp_context_h context;
    ucp_worker_h worker;
    init_ucp(&context, &worker);

    void *allocated = NULL;
    if (posix_memalign(&allocated, 4096, SERVER_BUFFER_SIZE) != 0) {
        fail("no memory for the %d-byte server buffer", SERVER_BUFFER_SIZE);
    }
    uint8_t *buffer = allocated;
    ucp_mem_map_params_t map = {0};
    map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    map.address = buffer;
    map.length = SERVER_BUFFER_SIZE;
    ucp_mem_h memh;
    ucs_status_t status = ucp_mem_map(context, &map, &memh);
    if (status != UCS_OK) {
        fail("ucp_mem_map: %s", ucs_status_string(status));
    }
    void *rkey_buffer;
    size_t rkey_size;
    status = ucp_rkey_pack(context, memh, &rkey_buffer, &rkey_size);
    if (status != UCS_OK) {
        fail("ucp_rkey_pack: %s", ucs_status_string(status));
    }

    struct sockaddr_in sa = make_address(ip, port);
    ucp_listener_params_t lparams = {0};
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr = (const struct sockaddr *)&sa;
    lparams.sockaddr.addrlen = sizeof(sa);
    lparams.conn_handler.cb = on_connection;
    lparams.conn_handler.arg = NULL;
    status = ucp_listener_create(worker, &lparams, &listener);
    if (status != UCS_OK) {
        fail("ucp_listener_create on %s:%s: %s", ip, port, ucs_status_string(status));
    }
    ucp_listener_attr_t lattr = {0};
    lattr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    status = ucp_listener_query(listener, &lattr);
    if (status != UCS_OK) {
        fail("ucp_listener_query: %s", ucs_status_string(status));
    }
    printf("listening on port %u\n", ntohs(((struct sockaddr_in *)&lattr.sockaddr)->sin_port));
    fflush(stdout);

    for (int round = 0; round < ROUNDS; round++) {
        server_round(worker, round, buffer, rkey_buffer, rkey_size);
    }

    ucp_listener_destroy(listener);
    ucp_rkey_buffer_release(rkey_buffer);
    ucp_mem_unmap(context, memh);
    free(buffer);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    printf("server: all rounds OK\n");
    return 0;
}

/* ------------------------------------------------------------ client */

static void rma(ucp_worker_h worker, ucp_ep_h ep, int put, void *local, size_t len,
                uint64_t remote, ucp_rkey_h rkey, const char *what)
{
    ucp_request_param_t param = {0};
    void *req = put ? ucp_put_nbx(ep, local, len, remote, rkey, &param)
                    : ucp_get_nbx(ep, local, len, remote, rkey, &param);
    wait_request(worker, req, what);
}

/* One 64-bit atomic; returns the fetched value. */
static uint64_t atomic_op(ucp_worker_h worker, ucp_ep_h ep, ucp_atomic_op_t op, uint64_t operand,
                          uint64_t reply_in, uint64_t remote, ucp_rkey_h rkey, const char *what)
{
    ucp_request_param_t param = {0};
    uint64_t reply = reply_in;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = &reply;
    wait_request(worker, ucp_atomic_op_nbx(ep, op, &operand, 1, remote, rkey, &param), what);
    return reply;
}

static void client_round(ucp_worker_h worker, int round, const struct sockaddr_in *sa)
{
    struct peer peer = {0};
    ucp_ep_params_t ep_params = {0};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep_params.sockaddr.addr = (const struct sockaddr *)sa;
    ep_params.sockaddr.addrlen = sizeof(*sa);
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = on_ep_error;
    ep_params.err_handler.arg = &peer;
    ucs_status_t status = ucp_ep_create(worker, &ep_params, &peer.ep);
    if (status != UCS_OK) {
        fail("round %d: ucp_ep_create to the server: %s", round, ucs_status_string(status));
    }

    uint8_t rkey_message[4096];
    /* The rkey's size is not known in advance: receive into a big buffer
     * and take the length from the header. */
    {
        ucp_request_param_t param = {0};
        void *req = ucp_tag_recv_nbx(worker, rkey_message, sizeof(rkey_message),
                                     make_tag(round, MSG_RKEY, 0), UINT64_MAX, &param);
        if (UCS_PTR_IS_ERR(req)) {
            fail("receive rkey: %s", ucs_status_string(UCS_PTR_STATUS(req)));
        }
        double deadline = now() + UCP_WAIT_SECONDS;
        ucp_tag_recv_info_t info;
        while ((status = ucp_tag_recv_request_test(req, &info)) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
            if (peer.failed) {
                fail("round %d: endpoint failed before the rkey came: %s", round,
                     ucs_status_string(peer.error));
            }
            if (now() > deadline) {
                fail("round %d: no rkey from the server after %.0f s", round, UCP_WAIT_SECONDS);
            }
        }
        ucp_request_free(req);
        if (status != UCS_OK) {
            fail("receive rkey: %s", ucs_status_string(status));
        }
        struct rkey_header header;
        if (info.length < sizeof(header)) {
            fail("rkey message of %zu bytes", info.length);
        }
        memcpy(&header, rkey_message, sizeof(header));
        if (header.rkey_size != info.length - sizeof(header)) {
            fail("rkey message: header says %" PRIu64 " rkey bytes, %zu came",
                 header.rkey_size, info.length - sizeof(header));
        }
    }
    struct rkey_header header;
    memcpy(&header, rkey_message, sizeof(header));
    ucp_rkey_h rkey;
    status = ucp_ep_rkey_unpack(peer.ep, rkey_message + sizeof(header), &rkey);
    if (status != UCS_OK) {
        fail("ucp_ep_rkey_unpack: %s", ucs_status_string(status));
    }
    printf("round %d: connected, rkey of %" PRIu64 " bytes unpacked\n", round,
           header.rkey_size);

    uint8_t *data = malloc(MIB);
    for (unsigned i = 0; i < NSIZES; i++) {
        char what[64];
        snprintf(what, sizeof(what), "tag client->server %zu B", sizes[i]);
        fill(data, sizes[i], 10 * round + i);
        send_tag(worker, peer.ep, data, sizes[i], make_tag(round, MSG_CLIENT_DATA, i), what);
        memset(data, 0, sizes[i]);
        recv_tag(worker, data, sizes[i], make_tag(round, MSG_SERVER_DATA, i),
                 "tag server->client");
        check("tag", data, sizes[i], 100 + 10 * round + i);
        printf("round %d: tag %zu B both ways OK\n", round, sizes[i]);
    }

    uint8_t *readback = malloc(MIB);
    for (unsigned i = 0; i < NSIZES; i++) {
        char what[64];
        unsigned seed = 50 + 10 * round + i;
        fill(data, sizes[i], seed);
        snprintf(what, sizeof(what), "ucp_put_nbx %zu B", sizes[i]);
        rma(worker, peer.ep, 1, data, sizes[i], header.address + PUT_OFFSET, rkey, what);
        flush_ep(worker, peer.ep, "flush after put");
        memset(readback, 0, sizes[i]);
        snprintf(what, sizeof(what), "ucp_get_nbx of the put %zu B", sizes[i]);
        rma(worker, peer.ep, 0, readback, sizes[i], header.address + PUT_OFFSET, rkey, what);
        check("put", readback, sizes[i], seed);
        memset(readback, 0, sizes[i]);
        snprintf(what, sizeof(what), "ucp_get_nbx %zu B", sizes[i]);
        rma(worker, peer.ep, 0, readback, sizes[i], header.address + GET_OFFSET, rkey, what);
        check("get", readback, sizes[i], 200 + round);
        printf("round %d: put/get %zu B OK\n", round, sizes[i]);
    }
    free(readback);
    free(data);

    uint64_t word = header.address + ATOMIC_OFFSET;
    uint64_t initial = ATOMIC_INITIAL + round;
    uint64_t got = atomic_op(worker, peer.ep, UCP_ATOMIC_OP_ADD, ATOMIC_ADD, 0, word, rkey,
                             "atomic ADD");
    check_u64("atomic ADD fetched", got, initial);
    got = atomic_op(worker, peer.ep, UCP_ATOMIC_OP_SWAP, ATOMIC_SWAP, 0, word, rkey,
                    "atomic SWAP");
    check_u64("atomic SWAP fetched", got, initial + ATOMIC_ADD);
    /* A compare that does not match: fetches the word, changes nothing. */
    got = atomic_op(worker, peer.ep, UCP_ATOMIC_OP_CSWAP, ATOMIC_SWAP + 1, ATOMIC_CSWAP, word,
                    rkey, "atomic CSWAP (no match)");
    check_u64("atomic CSWAP (no match) fetched", got, ATOMIC_SWAP);
    got = atomic_op(worker, peer.ep, UCP_ATOMIC_OP_CSWAP, ATOMIC_SWAP, ATOMIC_CSWAP, word, rkey,
                    "atomic CSWAP");
    check_u64("atomic CSWAP fetched", got, ATOMIC_SWAP);
    uint64_t final_word = 0;
    rma(worker, peer.ep, 0, &final_word, sizeof(final_word), word, rkey, "get atomic word");
    check_u64("atomic word read back", final_word, ATOMIC_CSWAP);
    printf("round %d: atomics ADD/SWAP/CSWAP OK\n", round);

    flush_ep(worker, peer.ep, "flush before done");
    uint64_t done = 1, verdict = UINT64_MAX;
    send_tag(worker, peer.ep, &done, sizeof(done), make_tag(round, MSG_DONE, 0), "send done");
    recv_tag(worker, &verdict, sizeof(verdict), make_tag(round, MSG_VERDICT, 0),
             "receive verdict");
    if (verdict != UCS_OK) {
        fail("round %d: the server found the put or the atomic word wrong (status %" PRId64
             ")", round, (int64_t)verdict);
    }

    ucp_rkey_destroy(rkey);
    if (peer.failed) {
        fail("round %d: endpoint failed: %s", round, ucs_status_string(peer.error));
    }
    int force = (round == 1);
    close_ep(worker, peer.ep, force, force ? "ucp_ep_close_nbx (force)" : "ucp_ep_close_nbx (flush)");
    printf("round %d: closed (%s) OK\n", round, force ? "force" : "flush");
    fflush(stdout);
}

static int run_client(const char *ip, const char *port)
{
    ucp_context_h context;
    ucp_worker_h worker;
    init_ucp(&context, &worker);
    struct sockaddr_in sa = make_address(ip, port);
    for (int round = 0; round < ROUNDS; round++) {
        client_round(worker, round, &sa);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    printf("client: all rounds OK\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[4], "--corrupt") == 0) {
        corrupt = argv[5];
        argc = 4;
    }
    if (argc != 4 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
        fprintf(stderr, "usage: %s server|client IP PORT [--corrupt tag|put|get|atomic]\n",
                argv[0]);
        return 2;
    }
    ucp_wait_role = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(ucp_wait_role, "server") == 0) {
        return run_server(argv[2], argv[3]);
    }
    return run_client(argv[2], argv[3]);
}
