// Linux epoll and eventfd for the HTTP server's event loops. `struct epoll_event` is packed on
// x86-64, which Swift imports poorly, so the server only sees these plain wrappers.
#ifndef TG_CSYSTEM_SHIM_H
#define TG_CSYSTEM_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <errno.h>

static const uint32_t TG_EPOLLIN = EPOLLIN;
static const uint32_t TG_EPOLLOUT = EPOLLOUT;
static const uint32_t TG_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t TG_EPOLLERR = EPOLLERR;
static const uint32_t TG_EPOLLHUP = EPOLLHUP;
static const uint32_t TG_EPOLLET = EPOLLET;

static inline int tg_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int tg_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline int tg_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event event;
    event.events = events;
    event.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &event);
}
static inline int tg_epoll_add(int epfd, int fd, uint32_t events) { return tg_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, events); }
static inline int tg_epoll_mod(int epfd, int fd, uint32_t events) { return tg_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, events); }
static inline int tg_epoll_del(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, 0); }

/// Waits for up to `max` events (max <= 256), writing descriptors and event bits side by side.
static inline int tg_epoll_wait(int epfd, int *fds, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event raw[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, raw, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        fds[i] = raw[i].data.fd;
        events[i] = raw[i].events;
    }
    return n;
}
#endif
