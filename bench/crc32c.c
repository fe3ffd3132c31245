/* bench/crc32c.c — CRC-32C throughput of the gateway's tg_crc32c (Sources/CCrypto/shim.h)
   beside the same instruction taken one lane at a time, over a 512 KiB buffer (the largest body
   read) summed 2048 times, in memory. Built and run by bench/crc32c.sh. */
#include "../Sources/CCrypto/shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((target("sse4.2")))
static uint32_t one_lane(uint32_t crc, const unsigned char *p, size_t n) {
    unsigned long long c = ~crc & 0xffffffffu;
    while (n >= 8) { unsigned long long word; memcpy(&word, p, 8); c = __builtin_ia32_crc32di(c, word); p += 8; n -= 8; }
    while (n > 0) { c = __builtin_ia32_crc32qi((unsigned int)c, *p++); n--; }
    return ~(uint32_t)c;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
    const size_t size = 512 * 1024;
    const int rounds = 2048;
    unsigned char *buffer = aligned_alloc(64, size);
    for (size_t i = 0; i < size; i++) buffer[i] = (unsigned char)rand();
    uint32_t a = 0, b = 0;
    double t0 = seconds();
    for (int r = 0; r < rounds; r++) a = one_lane(a, buffer, size);
    double t1 = seconds();
    for (int r = 0; r < rounds; r++) b = tg_crc32c(b, buffer, size);
    double t2 = seconds();
    if (a != b) { fprintf(stderr, "results differ\n"); return 1; }
    printf("%.2f %.2f\n", size * (double)rounds / (t1 - t0) / 1e9, size * (double)rounds / (t2 - t1) / 1e9);
    return 0;
}
