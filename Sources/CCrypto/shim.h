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

/* RFC 2104 over SHA-256, key of any length. */
static inline void tg_hmac_sha256(const void *key, size_t keyLength, const void *message, size_t messageLength,
                                  unsigned char out[32]) {
    unsigned char block[64] = {0};
    unsigned char pad[64];
    unsigned char inner[32];
    SHA256_CTX context;
    if (keyLength > 64) tg_sha256(key, keyLength, block); else if (keyLength > 0) memcpy(block, key, keyLength);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x36;
    SHA256_Init(&context);
    SHA256_Update(&context, pad, 64);
    SHA256_Update(&context, message, messageLength);
    SHA256_Final(inner, &context);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x5C;
    SHA256_Init(&context);
    SHA256_Update(&context, pad, 64);
    SHA256_Update(&context, inner, 32);
    SHA256_Final(out, &context);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
}
#pragma GCC diagnostic pop
#endif
