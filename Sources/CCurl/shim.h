// Thin wrappers over libcurl's variadic setters, which Swift cannot call directly.
#ifndef TG_CCURL_SHIM_H
#define TG_CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode tg_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tg_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tg_easy_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tg_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tg_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*tg_data_callback)(char *, size_t, size_t, void *);
static inline CURLcode tg_easy_setopt_datafn(CURL *h, CURLoption o, tg_data_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tg_easy_setopt_xferinfo(CURL *h, curl_xferinfo_callback f) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }
static inline CURLcode tg_easy_setopt_seek(CURL *h, curl_seek_callback f) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, f); }
static inline CURLcode tg_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode tg_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode tg_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode tg_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
/// The easy handle and result of a finished transfer, or 0 when no message is waiting.
static inline int tg_multi_next_done(CURLM *m, CURL **easy, CURLcode *result) {
    int left = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            *easy = msg->easy_handle;
            *result = msg->data.result;
            return 1;
        }
    }
    return 0;
}
static inline CURLMcode tg_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
#endif
