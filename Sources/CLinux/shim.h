#ifndef BUZZKIT_CLINUX_SHIM_H
#define BUZZKIT_CLINUX_SHIM_H
// Glibc's Swift overlay does not export these Linux-only headers.
#define _GNU_SOURCE 1
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>

// accept4 is behind _GNU_SOURCE, which Swift's Glibc import does not define.
static inline int buzzkit_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return accept4(fd, addr, len, flags);
}

// errno is a macro over a thread-local; a function keeps Swift's reading of it plain.
static inline int buzzkit_errno(void) { return errno; }
#endif
