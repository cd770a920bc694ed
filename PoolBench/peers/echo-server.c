// RFC 862 echo over TCP and UDP in C, with N threads: the C peer PoolBench loads beside ours.
// usage: echo-server PORT [THREADS] [ADDRESS]
//   PORT     0 picks a free port for TCP and another for UDP
//   THREADS  worker threads (default: the CPUs this process may run on)
//   ADDRESS  IPv4 or IPv6 address to bind (default: 127.0.0.1)
// Build: gcc -O2 -pthread -o echo-server echo-server.c (PoolBench builds it when --server asks for c).
//
// Every worker has an epoll instance of its own holding the TCP listener and the UDP socket, both
// shared and registered with EPOLLEXCLUSIVE, so a new connection or datagram wakes one worker. A
// worker accepts connections into its own epoll and serves them alone, level-triggered: what it
// reads it sends back at once; what the socket does not take waits, and the connection stops
// reading until the client has taken it. A datagram is sent back to its sender from the worker
// that received it. When both listen it prints "tcp echo listening on ADDRESS:PORT" and the same
// for udp, as our servers' host does; it exits when its standard input closes, so it never
// outlives the benchmark that started it.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUFFER_SIZE 65536
#define MAX_EVENTS 256
// Datagrams one wake-up echoes before the worker looks at its connections again.
#define DATAGRAMS_PER_WAKEUP 64

// A TCP connection, owned by the one worker whose epoll holds it. pending holds what the socket
// did not take yet (pending_length bytes from pending_offset); while it holds anything the
// connection waits for EPOLLOUT instead of EPOLLIN.
struct connection {
    int fd;
    char *pending;
    size_t pending_offset;
    size_t pending_length;
};

// The shared sockets, told apart from connections by their epoll data.
static struct connection listener = { .fd = -1 };
static struct connection datagrams = { .fd = -1 };

static void fail(const char *what) {
    fprintf(stderr, "echo-server: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void close_connection(struct connection *c) {
    close(c->fd); // also removes it from its epoll
    free(c->pending);
    free(c);
}

static int watch(int epoll, struct connection *c, int op, uint32_t events) {
    struct epoll_event event = { .events = events, .data.ptr = c };
    return epoll_ctl(epoll, op, c->fd, &event);
}

// Sends what is pending; 0 when all of it went, 1 when the socket is full, -1 when the connection failed.
static int flush_pending(struct connection *c) {
    while (c->pending_length > 0) {
        ssize_t sent = send(c->fd, c->pending + c->pending_offset, c->pending_length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent < 0) {
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
        }
        c->pending_offset += (size_t)sent;
        c->pending_length -= (size_t)sent;
    }
    c->pending_offset = 0;
    return 0;
}

static void accept_all(int epoll) {
    for (;;) {
        int fd = accept4(listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            // EAGAIN: another worker took it, or the backlog is empty; anything else concerns one client.
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct connection *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        if (watch(epoll, c, EPOLL_CTL_ADD, EPOLLIN) != 0) {
            close_connection(c);
        }
    }
}

static void echo_datagrams(char *buffer) {
    for (int i = 0; i < DATAGRAMS_PER_WAKEUP; i++) {
        struct sockaddr_storage sender;
        socklen_t sender_length = sizeof sender;
        ssize_t received = recvfrom(datagrams.fd, buffer, BUFFER_SIZE, MSG_TRUNC, (struct sockaddr *)&sender, &sender_length);
        if (received < 0) {
            return; // EAGAIN: nothing left; an ICMP report about an earlier reply is dropped the same way
        }
        if (received <= BUFFER_SIZE) { // a larger one was truncated: never echo a truncated copy
            sendto(datagrams.fd, buffer, (size_t)received, MSG_NOSIGNAL, (struct sockaddr *)&sender, sender_length);
        }
    }
}

// Reads what the client sent and sends it back; returns 0 to keep the connection, -1 to close it.
static int echo_stream(int epoll, struct connection *c, char *buffer) {
    ssize_t received = recv(c->fd, buffer, BUFFER_SIZE, 0);
    if (received == 0) {
        return -1; // the client closed or half-closed, and everything it sent has been echoed
    }
    if (received < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    }
    c->pending = buffer;
    c->pending_length = (size_t)received;
    int flushed = flush_pending(c);
    if (flushed != 1) {
        c->pending = NULL;
        return flushed;
    }
    // The socket is full: keep the rest and wait until it can take more.
    char *rest = malloc(c->pending_length);
    if (rest == NULL) {
        c->pending = NULL;
        return -1;
    }
    memcpy(rest, buffer + c->pending_offset, c->pending_length);
    c->pending = rest;
    c->pending_offset = 0;
    return watch(epoll, c, EPOLL_CTL_MOD, EPOLLOUT);
}

static int send_rest(int epoll, struct connection *c) {
    int flushed = flush_pending(c);
    if (flushed != 0) {
        return flushed < 0 ? -1 : 0;
    }
    free(c->pending);
    c->pending = NULL;
    return watch(epoll, c, EPOLL_CTL_MOD, EPOLLIN);
}

// One event of a connection; returns 0 to keep it, -1 to close it.
static int serve(int epoll, struct connection *c, uint32_t events, char *buffer) {
    if (c->pending != NULL) {
        // Waiting to send the rest: room sends it; an error or a hang-up alone ends the connection.
        return (events & EPOLLOUT) ? send_rest(epoll, c) : -1;
    }
    return echo_stream(epoll, c, buffer);
}

static void *worker(void *unused) {
    (void)unused;
    char *buffer = malloc(BUFFER_SIZE);
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (buffer == NULL || epoll < 0
        || watch(epoll, &listener, EPOLL_CTL_ADD, EPOLLIN | EPOLLEXCLUSIVE) != 0
        || watch(epoll, &datagrams, EPOLL_CTL_ADD, EPOLLIN | EPOLLEXCLUSIVE) != 0) {
        fail("worker set-up");
    }
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int count = epoll_wait(epoll, events, MAX_EVENTS, -1);
        if (count < 0 && errno != EINTR) {
            fail("epoll_wait");
        }
        for (int i = 0; i < count; i++) {
            struct connection *c = events[i].data.ptr;
            if (c == &listener) {
                accept_all(epoll);
            } else if (c == &datagrams) {
                echo_datagrams(buffer);
            } else if (serve(epoll, c, events[i].events, buffer) != 0) {
                close_connection(c);
            }
        }
    }
    return NULL;
}

// Binds a non-blocking socket of the given type; port 0 picks a free one.
static int bind_socket(int type, const char *address, int port) {
    struct sockaddr_storage storage = { 0 };
    socklen_t length;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        length = sizeof *v4;
    } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        length = sizeof *v6;
    } else {
        fprintf(stderr, "echo-server: '%s' is not an IP address\n", address);
        exit(2);
    }
    int fd = socket(storage.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail("socket");
    }
    // TCP only: lets a restarted server bind while old connections linger; on Linux it never lets two listen.
    int one = 1;
    if (type == SOCK_STREAM) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    if (bind(fd, (struct sockaddr *)&storage, length) != 0) {
        fail("bind");
    }
    return fd;
}

static int bound_port(int fd) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof storage;
    if (getsockname(fd, (struct sockaddr *)&storage, &length) != 0) {
        fail("getsockname");
    }
    return ntohs(storage.ss_family == AF_INET ? ((struct sockaddr_in *)&storage)->sin_port
                                              : ((struct sockaddr_in6 *)&storage)->sin6_port);
}

// "tcp echo listening on 127.0.0.1:7007", with the address in brackets for IPv6, as IPEndPoint writes it.
static void print_listening(const char *protocol, const char *address, int port) {
    if (strchr(address, ':') != NULL) {
        printf("%s echo listening on [%s]:%d\n", protocol, address, port);
    } else {
        printf("%s echo listening on %s:%d\n", protocol, address, port);
    }
}

static int number(const char *text, int min, int max, const char *what) {
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < min || value > max) {
        fprintf(stderr, "echo-server: %s must be a whole number from %d to %d, not '%s'\n", what, min, max, text);
        exit(2);
    }
    return (int)value;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: echo-server PORT [THREADS] [ADDRESS]\n");
        return 2;
    }
    int port = number(argv[1], 0, 65535, "PORT");
    cpu_set_t cpus;
    int threads = argc > 2 ? number(argv[2], 1, 1024, "THREADS")
                  : sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    const char *address = argc > 3 ? argv[3] : "127.0.0.1";

    listener.fd = bind_socket(SOCK_STREAM, address, port);
    if (listen(listener.fd, 4096) != 0) {
        fail("listen");
    }
    datagrams.fd = bind_socket(SOCK_DGRAM, address, port);

    for (int i = 0; i < threads; i++) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker, NULL) != 0) {
            fail("pthread_create");
        }
        pthread_detach(thread);
    }

    print_listening("tcp", address, bound_port(listener.fd));
    print_listening("udp", address, bound_port(datagrams.fd));
    fflush(stdout);

    char discard[256];
    while (read(STDIN_FILENO, discard, sizeof discard) > 0) {
    }
    return 0;
}
