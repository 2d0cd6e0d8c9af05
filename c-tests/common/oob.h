/*
 * The out-of-band pieces the multi-process C tests and demos share: a clock,
 * a 64-bit mixer for deterministic patterns, and a socket that carries
 * addresses and small commands between the processes (whole-buffer writes
 * and reads, framed messages, a bounded wait for input). Everything checked
 * travels over UCT; this is only the side channel.
 *
 * Header-only (static inline), so a program takes it with one #include and
 * nothing to link. Errors come back as return values (0 or a negative errno,
 * -EPIPE when the peer closed the socket); the caller decides how to fail.
 * rc_ops (c-tests/rc/ops) and tools/failover_demo use it.
 */
#ifndef UCT_TEST_OOB_H
#define UCT_TEST_OOB_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double oob_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A bijective 64-bit mixer (splitmix64's finalizer): pattern bytes and
 * seeded choices that both processes compute alike. */
static inline uint64_t oob_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Writes all `len` bytes (retrying short writes and EINTR): 0, or a
 * negative errno (-EPIPE: the peer is gone). */
static inline int oob_write_full(int fd, const void *buf, size_t len)
{
    const uint8_t *p = (const uint8_t *)buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EPIPE;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly `len` bytes: 0, -EPIPE if the peer closed the socket
 * first, or another negative errno. */
static inline int oob_read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = (uint8_t *)buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EPIPE;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Whether `fd` has input within `timeout_ms` (-1: wait for it): 1, 0 on
 * timeout, or a negative errno. */
static inline int oob_wait_readable(int fd, int timeout_ms)
{
    struct pollfd pfd;
    int rc;
    pfd.fd     = fd;
    pfd.events = POLLIN;
    do {
        rc = poll(&pfd, 1, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc > 0;
}

/* The frame of one message on a stream socket: type, then `len` bytes. */
struct oob_msg_hdr {
    uint32_t type;
    uint32_t len;
};

/* The largest message oob_msg_recv takes (a bound against a garbled frame). */
#define OOB_MSG_MAX (64u << 20)

/* Sends one framed message: 0 or a negative errno. */
static inline int oob_msg_send(int fd, uint32_t type, const void *data, size_t len)
{
    struct oob_msg_hdr h;
    int rc;
    if (len > OOB_MSG_MAX) {
        return -EMSGSIZE;
    }
    h.type = type;
    h.len  = (uint32_t)len;
    rc     = oob_write_full(fd, &h, sizeof(h));
    if (rc == 0 && len > 0) {
        rc = oob_write_full(fd, data, len);
    }
    return rc;
}

/* Receives one framed message into `*data` (malloc'd, NUL-terminated, the
 * caller frees it): 0, -EMSGSIZE for a frame over OOB_MSG_MAX, -ENOMEM, or
 * what oob_read_full returned. */
static inline int oob_msg_recv(int fd, uint32_t *type, void **data, size_t *len)
{
    struct oob_msg_hdr h;
    uint8_t *buf;
    int rc = oob_read_full(fd, &h, sizeof(h));
    if (rc != 0) {
        return rc;
    }
    if (h.len > OOB_MSG_MAX) {
        return -EMSGSIZE;
    }
    buf = (uint8_t *)malloc((size_t)h.len + 1);
    if (buf == NULL) {
        return -ENOMEM;
    }
    rc = oob_read_full(fd, buf, h.len);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[h.len] = 0;
    *type      = h.type;
    *data      = buf;
    *len       = h.len;
    return 0;
}

#endif
