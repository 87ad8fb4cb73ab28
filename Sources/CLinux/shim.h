#ifndef BUZZKIT_CLINUX_SHIM_H
#define BUZZKIT_CLINUX_SHIM_H
// Glibc's Swift overlay does not export these Linux-only headers.
// No _GNU_SOURCE here: it changes struct and enum definitions (fd_set, __rusage_who) that
// SwiftGlibc also imports, and clang then refuses to load both modules in one file.
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
#include <pthread.h>

// accept4 is behind _GNU_SOURCE, which Swift's Glibc import does not define; declared here
// (the glibc symbol exists regardless) so both modules agree on every other definition.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
static inline int buzzkit_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return accept4(fd, addr, len, flags);
}

// pthread_setname_np/pthread_getname_np are behind _GNU_SOURCE too; declared the same way so
// threads show their job in `top -H`, gdb and crash reports.
extern int pthread_setname_np(pthread_t thread, const char *name);
extern int pthread_getname_np(pthread_t thread, char *name, size_t length);

// errno is a macro over a thread-local; a function keeps Swift's reading of it plain.
static inline int buzzkit_errno(void) { return errno; }
#endif
