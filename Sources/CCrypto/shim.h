// libcrypto (OpenSSL 3) as seen from Swift. OPENSSL_free is a macro Swift cannot see.
#ifndef TG_CCRYPTO_SHIM_H
#define TG_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/md5.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <string.h>
#include <stdint.h>

static inline void tg_openssl_free(void *p) { OPENSSL_free(p); }

/* SHA-256 and HMAC-SHA256 on the stack. OpenSSL 3 marks the low-level SHA256_* calls
   deprecated in favour of EVP, but EVP allocates a context per digest and looks the
   provider up each time; signing a presigned URL takes three digests, so the direct calls
   (still shipped and supported in OpenSSL 3) are used here and nowhere else. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline void tg_sha256(const void *data, size_t length, unsigned char out[32]) {
    SHA256_CTX context;
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(out, &context);
}

/* HMAC-SHA256 (RFC 2104), key of any length, in two steps: `prepare` makes `inner` and `outer`
   the SHA-256 states that have absorbed the key's inner and outer pads, once per key; each
   message then costs only its own blocks and the outer one (`prepared`). */
static inline void tg_hmac_sha256_prepare(const void *key, size_t keyLength, SHA256_CTX *inner, SHA256_CTX *outer) {
    unsigned char block[64] = {0};
    unsigned char pad[64];
    if (keyLength > 64) tg_sha256(key, keyLength, block); else if (keyLength > 0) memcpy(block, key, keyLength);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x36;
    SHA256_Init(inner);
    SHA256_Update(inner, pad, 64);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x5C;
    SHA256_Init(outer);
    SHA256_Update(outer, pad, 64);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
}

static inline void tg_hmac_sha256_prepared(const SHA256_CTX *inner, const SHA256_CTX *outer, const void *message,
                                           size_t messageLength, unsigned char out[32]) {
    SHA256_CTX context = *inner;
    unsigned char digest[32];
    SHA256_Update(&context, message, messageLength);
    SHA256_Final(digest, &context);
    context = *outer;
    SHA256_Update(&context, digest, 32);
    SHA256_Final(out, &context);
}

/* The same in one call, for a key used once. */
static inline void tg_hmac_sha256(const void *key, size_t keyLength, const void *message, size_t messageLength,
                                  unsigned char out[32]) {
    SHA256_CTX inner, outer;
    tg_hmac_sha256_prepare(key, keyLength, &inner, &outer);
    tg_hmac_sha256_prepared(&inner, &outer, message, messageLength, out);
    OPENSSL_cleanse(&inner, sizeof inner);
    OPENSSL_cleanse(&outer, sizeof outer);
}
#pragma GCC diagnostic pop
/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as S3's x-amz-checksum-crc32c wants
   it: `crc` is the running value (0 to begin), the result feeds the next call. With SSE 4.2
   the CPU's crc32 instruction takes eight bytes a step (the builtins, not <nmmintrin.h>, whose
   inline wrappers Swift does not emit); elsewhere a bit at a time. */
/* a * b modulo the polynomial, both in the CRC's reflected form (bit 31 is x^0): what a CRC
   register `b` becomes after `a` = x^(8n) mod P, i.e. after n zero bytes. */
static inline uint32_t tg_crc32c_multiply(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (int i = 0; i < 32; i++) {
        product ^= b & (0u - (a >> 31));
        a <<= 1;
        b = (b >> 1) ^ (0x82F63B78u & (0u - (b & 1u)));
    }
    return product;
}

/* x^(8 * 4096) mod P: a register shifted past one lane of 4096 bytes (CRC32CTests checks it). */
#define TG_CRC32C_LANE 4096
#define TG_CRC32C_LANE_SHIFT 0x35d73a62u

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static inline uint32_t tg_crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n) {
    unsigned long long c = ~crc & 0xffffffffu;
    while (n > 0 && ((uintptr_t)p & 7) != 0) { c = __builtin_ia32_crc32qi((unsigned int)c, *p++); n--; }
    /* The instruction takes three cycles to give its result and can start one a cycle: three
       lanes of TG_CRC32C_LANE bytes are summed side by side, the second and third from zero,
       and joined by shifting the earlier lanes' registers past the later ones. */
    while (n >= 3 * TG_CRC32C_LANE) {
        unsigned long long a = c, b = 0, d = 0;
        for (size_t i = 0; i < TG_CRC32C_LANE; i += 8) {
            unsigned long long wa, wb, wd;
            memcpy(&wa, p + i, 8);
            memcpy(&wb, p + TG_CRC32C_LANE + i, 8);
            memcpy(&wd, p + 2 * TG_CRC32C_LANE + i, 8);
            a = __builtin_ia32_crc32di(a, wa);
            b = __builtin_ia32_crc32di(b, wb);
            d = __builtin_ia32_crc32di(d, wd);
        }
        uint32_t ab = tg_crc32c_multiply(TG_CRC32C_LANE_SHIFT, (uint32_t)a) ^ (uint32_t)b;
        c = tg_crc32c_multiply(TG_CRC32C_LANE_SHIFT, ab) ^ (uint32_t)d;
        p += 3 * TG_CRC32C_LANE;
        n -= 3 * TG_CRC32C_LANE;
    }
    while (n >= 8) { unsigned long long word; memcpy(&word, p, 8); c = __builtin_ia32_crc32di(c, word); p += 8; n -= 8; }
    while (n > 0) { c = __builtin_ia32_crc32qi((unsigned int)c, *p++); n--; }
    return ~(uint32_t)c;
}
#endif

static inline uint32_t tg_crc32c_bitwise(uint32_t crc, const unsigned char *p, size_t n) {
    uint32_t c = ~crc;
    while (n-- > 0) {
        c ^= *p++;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

static inline uint32_t tg_crc32c(uint32_t crc, const void *data, size_t n) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return tg_crc32c_sse42(crc, (const unsigned char *)data, n);
#endif
    return tg_crc32c_bitwise(crc, (const unsigned char *)data, n);
}

#endif
