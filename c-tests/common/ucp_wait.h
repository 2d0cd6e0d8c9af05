/*
 * What the UCP client-server programs share (c-tests/ucp/ucp_ops.c,
 * benches/ucp_tag_bench.c): one "FAIL <role>: ..." line and exit 1 on any
 * error, a monotonic clock, a bounded wait for a UCP request, and the
 * IPv4 socket address of an "IP PORT" argument pair.
 *
 * Header-only (static functions). The including program defines
 * UCP_WAIT_SECONDS (the bound of every wait) before including it and sets
 * `ucp_wait_role` ("server", "client") first thing in main.
 */
#ifndef UCT_TEST_UCP_WAIT_H
#define UCT_TEST_UCP_WAIT_H

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef UCP_WAIT_SECONDS
#error "define UCP_WAIT_SECONDS before including ucp_wait.h"
#endif

static const char *ucp_wait_role = "?";

static void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s: ", ucp_wait_role);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits for a send/RMA/atomic/flush/close request (NULL: done at once);
 * any error or a wait past UCP_WAIT_SECONDS fails the program. */
static void wait_request(ucp_worker_h worker, void *req, const char *what)
{
    if (req == NULL) {
        return;
    }
    if (UCS_PTR_IS_ERR(req)) {
        fail("%s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
    }
    double deadline = now() + UCP_WAIT_SECONDS;
    ucs_status_t status;
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if (now() > deadline) {
            fail("%s: not complete after %.0f s", what, (double)UCP_WAIT_SECONDS);
        }
    }
    ucp_request_free(req);
    if (status != UCS_OK) {
        fail("%s: %s", what, ucs_status_string(status));
    }
}

/* The IPv4 address IP:PORT (PORT 0: any); a bad argument fails the program. */
static struct sockaddr_in make_address(const char *ip, const char *port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    char *end;
    long p = strtol(port, &end, 10);
    if (*end != '\0' || p < 0 || p > 65535) {
        fail("bad port '%s'", port);
    }
    sa.sin_port = htons((uint16_t)p);
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        fail("bad IPv4 address '%s'", ip);
    }
    return sa;
}

#endif
