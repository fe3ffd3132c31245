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

static inline void tg_openssl_free(void *p) { OPENSSL_free(p); }
#endif
