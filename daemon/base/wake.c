/* wake.c - the event loop woken by a thread through a pipe (see wake.h). */
#include "daemon/base/wake.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    pcd_wake *w = arg;
    w->fn(w->arg);
}

int pcd_wake_open(pcd_wake *w, struct event_base *base, void (*fn)(void *arg), void *arg)
{
    int fd[2];
    if (pipe2(fd, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    *w = (pcd_wake){{fd[0], fd[1]}, NULL, fn, arg};
    if (!(w->ev = event_new(base, fd[0], EV_READ | EV_PERSIST, on_readable, w)) ||
        event_add(w->ev, NULL) != 0) {
        int e = w->ev ? errno : ENOMEM;
        if (w->ev)
            event_free(w->ev);
        close(fd[0]);
        close(fd[1]);
        *w = (pcd_wake){{-1, -1}, NULL, NULL, NULL};
        errno = e;
        return -1;
    }
    return 0;
}

void pcd_wake_up(pcd_wake *w)
{
    char one = 1;
    ssize_t n = write(w->fd[1], &one, 1);
    (void)n;
}

void pcd_wake_close(pcd_wake *w)
{
    if (w->ev) {
        event_free(w->ev);
        close(w->fd[0]);
        close(w->fd[1]);
    }
    *w = (pcd_wake){{-1, -1}, NULL, NULL, NULL};
}
