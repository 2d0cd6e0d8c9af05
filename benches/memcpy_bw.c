/*
 * memcpy_bw: single-core memcpy bandwidth of SIZE-byte copies (default
 * 1 MiB) between two buffers, for comparing a same-host transport's
 * bandwidth with what one core can copy. Prints
 * "RESULT memcpy_bw <size> <MB/s> MB/s".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t size = (argc > 1) ? strtoull(argv[1], NULL, 0) : 1024 * 1024;
    char *src = malloc(size), *dst = malloc(size);
    unsigned long copies = 0;
    double start, elapsed;

    if ((src == NULL) || (dst == NULL) || (size == 0)) {
        fprintf(stderr, "memcpy_bw: cannot allocate %zu bytes\n", size);
        return 1;
    }
    memset(src, 1, size);
    memset(dst, 2, size);
    start = now_sec();
    do {
        memcpy(dst, src, size);
        /* Keep the copy: the compiler may not drop it. */
        __asm__ volatile("" : : "r"(dst) : "memory");
        ++copies;
        elapsed = now_sec() - start;
    } while (elapsed < 0.5);
    printf("RESULT memcpy_bw %zu %g MB/s\n", size, copies * (double)size / elapsed / 1e6);
    free(src);
    free(dst);
    return 0;
}
