// PoolBench's TCP echo load client in C: one epoll thread, no allocation after a cell starts, so that a
// server is measured against a client that costs as little as a client can. It speaks the protocol of
// `PoolBench echo-client` on standard input and output (see Echo/Load/EchoLoadChild.cs):
//   start tcp HOST:PORT CONNECTIONS SIZE PIPELINE  -> started
//   measure                                         (counts echoes and latencies from now)
//   drain                                           -> the round's result, one JSON line
// Each connection keeps PIPELINE messages in flight; every echo is checked byte for byte (its first
// eight bytes are its sequence number). It exits when its standard input closes.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// The bucket layout of Echo/Load/LatencyHistogram.cs, so the parent merges these counts with its own.
#define LINEAR_BUCKETS 64
#define SUB_BUCKETS 32
#define SUB_BUCKET_BITS 5
#define BUCKETS (LINEAR_BUCKETS + (64 - SUB_BUCKET_BITS - 1) * SUB_BUCKETS)
#define DRAIN_LIMIT_NS 10000000000LL
#define STDIN_TAG UINT64_MAX

typedef struct {
    int fd;
    int done;          // drained, failed or closed: no longer polled
    int polling_out;   // EPOLLOUT is registered: unsent bytes wait for room
    uint64_t next_send;
    uint64_t next_receive;
    unsigned char *out;
    size_t out_start, out_end;  // unsent bytes are out[out_start, out_end)
    unsigned char *in;
    size_t filled;
    int64_t *sent_at;  // by sequence number modulo the pipeline
} connection;

static int s_epoll;
static connection *s_connections;
static int s_count, s_size, s_pipeline;
static unsigned char *s_tail;
static int s_measuring, s_draining;
static int64_t s_drain_deadline;
static long long s_messages, s_errors;
static char s_first_error[256];
static long long s_buckets[BUCKETS];

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int bucket(int64_t value) {
    if (value < LINEAR_BUCKETS) return value < 0 ? 0 : (int)value;
    int shift = 63 - __builtin_clzll((uint64_t)value) - SUB_BUCKET_BITS;
    return LINEAR_BUCKETS + (shift - 1) * SUB_BUCKETS + (int)(value >> shift) - SUB_BUCKETS;
}

static void fail(connection *c, const char *what) {
    s_errors++;
    if (s_first_error[0] == 0) snprintf(s_first_error, sizeof s_first_error, "%s", what);
    if (c != NULL && !c->done) {
        c->done = 1;
        epoll_ctl(s_epoll, EPOLL_CTL_DEL, c->fd, NULL);
    }
}

static void fill(unsigned char *message, uint64_t seq) {
    int header = s_size < 8 ? s_size : 8;
    for (int i = 0; i < header; i++) message[i] = (unsigned char)(seq >> (8 * i));
    memcpy(message + header, s_tail, (size_t)(s_size - header));
}

static int matches(const unsigned char *message, uint64_t seq) {
    unsigned char expected[8];
    int header = s_size < 8 ? s_size : 8;
    for (int i = 0; i < header; i++) expected[i] = (unsigned char)(seq >> (8 * i));
    return memcmp(message, expected, (size_t)header) == 0
        && memcmp(message + header, s_tail, (size_t)(s_size - header)) == 0;
}

static void poll_out(connection *c, int on) {
    if (c->polling_out == on) return;
    struct epoll_event e = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u64 = (uint64_t)(c - s_connections) };
    epoll_ctl(s_epoll, EPOLL_CTL_MOD, c->fd, &e);
    c->polling_out = on;
}

static void flush(connection *c) {
    while (c->out_start < c->out_end) {
        ssize_t sent = send(c->fd, c->out + c->out_start, c->out_end - c->out_start, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                poll_out(c, 1);
                return;
            }
            if (errno == EINTR) continue;
            char what[128];
            snprintf(what, sizeof what, "send: %s", strerror(errno));
            fail(c, what);
            return;
        }
        c->out_start += (size_t)sent;
    }
    c->out_start = c->out_end = 0;
    poll_out(c, 0);
}

// Queues `count` new messages behind the unsent ones; at most PIPELINE are in flight, so they fit.
static void send_messages(connection *c, int count) {
    if (count == 0) return;
    if (c->out_start > 0) {
        memmove(c->out, c->out + c->out_start, c->out_end - c->out_start);
        c->out_end -= c->out_start;
        c->out_start = 0;
    }
    int64_t stamp = now_ns();
    for (int i = 0; i < count; i++) {
        c->sent_at[c->next_send % (uint64_t)s_pipeline] = stamp;
        fill(c->out + c->out_end, c->next_send++);
        c->out_end += (size_t)s_size;
    }
    if (!c->polling_out) flush(c);
}

static void finish_if_drained(connection *c) {
    if (s_draining && !c->done && c->next_receive == c->next_send) {
        shutdown(c->fd, SHUT_WR);
        c->done = 1;
        epoll_ctl(s_epoll, EPOLL_CTL_DEL, c->fd, NULL);
    }
}

static void receive(connection *c) {
    ssize_t received = recv(c->fd, c->in + c->filled, (size_t)s_size * (size_t)s_pipeline - c->filled, 0);
    if (received < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        char what[128];
        snprintf(what, sizeof what, "receive: %s", strerror(errno));
        fail(c, what);
        return;
    }
    if (received == 0) {
        char what[128];
        snprintf(what, sizeof what, "the server closed the connection with %llu message(s) in flight",
                 (unsigned long long)(c->next_send - c->next_receive));
        fail(c, what);
        return;
    }
    c->filled += (size_t)received;
    size_t complete = c->filled / (size_t)s_size;
    int64_t now = s_measuring ? now_ns() : 0;
    for (size_t m = 0; m < complete; m++) {
        if (!matches(c->in + m * (size_t)s_size, c->next_receive)) {
            char what[128];
            snprintf(what, sizeof what, "echo of message %llu does not match what was sent", (unsigned long long)c->next_receive);
            fail(c, what);
            return;
        }
        if (s_measuring) {
            s_messages++;
            s_buckets[bucket(now - c->sent_at[c->next_receive % (uint64_t)s_pipeline])]++;
        }
        c->next_receive++;
    }
    c->filled -= complete * (size_t)s_size;
    memmove(c->in, c->in + complete * (size_t)s_size, c->filled);
    if (!s_draining) send_messages(c, (int)complete);
    finish_if_drained(c);
}

static void close_all(void) {
    for (int i = 0; i < s_count; i++) {
        connection *c = &s_connections[i];
        if (c->fd >= 0) {
            if (!c->done) epoll_ctl(s_epoll, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
        }
        free(c->out);
        free(c->in);
        free(c->sent_at);
    }
    free(s_connections);
    free(s_tail);
    s_connections = NULL;
    s_tail = NULL;
    s_count = 0;
}

static int parse_endpoint(const char *text, struct sockaddr_storage *address, socklen_t *length) {
    char host[128];
    const char *colon = strrchr(text, ':');
    if (colon == NULL || (size_t)(colon - text) >= sizeof host) return 0;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = 0;
    int port = atoi(colon + 1);
    memset(address, 0, sizeof *address);
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 2 || host[n - 1] != ']') return 0;
        host[n - 1] = 0;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)address;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *length = sizeof *v6;
        return inet_pton(AF_INET6, host + 1, &v6->sin6_addr) == 1;
    }
    struct sockaddr_in *v4 = (struct sockaddr_in *)address;
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *length = sizeof *v4;
    return inet_pton(AF_INET, host, &v4->sin_addr) == 1;
}

static void answer(const char *line) {
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

static int start(const char *endpoint, int count, int size, int pipeline) {
    struct sockaddr_storage address;
    socklen_t length;
    if (!parse_endpoint(endpoint, &address, &length) || count < 1 || size < 1 || pipeline < 1) return 0;
    s_count = count;
    s_size = size;
    s_pipeline = pipeline;
    s_measuring = s_draining = 0;
    s_messages = s_errors = 0;
    s_first_error[0] = 0;
    memset(s_buckets, 0, sizeof s_buckets);
    s_tail = malloc((size_t)size);
    for (int i = 0; i < size; i++) s_tail[i] = (unsigned char)(i * 131 + 17);
    s_connections = calloc((size_t)count, sizeof *s_connections);
    for (int i = 0; i < count; i++) {
        connection *c = &s_connections[i];
        c->out = malloc((size_t)size * (size_t)pipeline);
        c->in = malloc((size_t)size * (size_t)pipeline);
        c->sent_at = calloc((size_t)pipeline, sizeof *c->sent_at);
        c->fd = socket(address.ss_family, SOCK_STREAM, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&address, length) != 0) {
            char what[128];
            snprintf(what, sizeof what, "connect: %s", strerror(errno));
            c->done = 1;
            fail(NULL, what);
            continue;
        }
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event e = { .events = EPOLLIN, .data.u64 = (uint64_t)i };
        epoll_ctl(s_epoll, EPOLL_CTL_ADD, c->fd, &e);
    }
    for (int i = 0; i < count; i++) {
        if (!s_connections[i].done) send_messages(&s_connections[i], pipeline);
    }
    return 1;
}

static void print_result(void) {
    static char line[BUCKETS * 28 + 512];
    size_t n = (size_t)snprintf(line, sizeof line,
        "{\"messages\":%lld,\"errors\":%lld,\"lost\":0,\"client_allocated_bytes\":0,\"process_allocated_bytes\":0,\"first_error\":",
        s_messages, s_errors);
    if (s_first_error[0] == 0) {
        n += (size_t)snprintf(line + n, sizeof line - n, "null");
    } else {
        line[n++] = '"';
        for (const char *p = s_first_error; *p; p++) {
            if (*p == '"' || *p == '\\') line[n++] = '\\';
            line[n++] = (unsigned char)*p < 0x20 ? ' ' : *p;
        }
        line[n++] = '"';
    }
    n += (size_t)snprintf(line + n, sizeof line - n, ",\"latency_buckets\":{");
    const char *separator = "";
    for (int i = 0; i < BUCKETS; i++) {
        if (s_buckets[i] != 0) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%s\"%d\":%lld", separator, i, s_buckets[i]);
            separator = ",";
        }
    }
    snprintf(line + n, sizeof line - n, "}}");
    answer(line);
}

static int all_done(void) {
    for (int i = 0; i < s_count; i++) {
        if (!s_connections[i].done) return 0;
    }
    return 1;
}

static void drain(void) {
    s_measuring = 0;
    s_draining = 1;
    s_drain_deadline = now_ns() + DRAIN_LIMIT_NS;
    for (int i = 0; i < s_count; i++) finish_if_drained(&s_connections[i]);
}

static void end_drain(void) {
    for (int i = 0; i < s_count; i++) {
        if (!s_connections[i].done) fail(&s_connections[i], "the drain did not finish within 10 s");
    }
    print_result();
    close_all();
    s_draining = 0;
}

// Returns 0 to go on, the exit code otherwise.
static int command(char *line) {
    char endpoint[160];
    int count, size, pipeline;
    if (sscanf(line, "start tcp %159s %d %d %d", endpoint, &count, &size, &pipeline) == 4) {
        if (!start(endpoint, count, size, pipeline)) {
            fprintf(stderr, "echo-client: bad start command '%s'\n", line);
            return 2;
        }
        answer("started");
    } else if (strcmp(line, "measure") == 0) {
        s_measuring = 1;
    } else if (strcmp(line, "drain") == 0) {
        drain();
    } else {
        fprintf(stderr, "echo-client: unknown command '%s' (TCP only)\n", line);
        return 2;
    }
    return 0;
}

int main(void) {
    s_epoll = epoll_create1(0);
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    struct epoll_event in = { .events = EPOLLIN, .data.u64 = STDIN_TAG };
    epoll_ctl(s_epoll, EPOLL_CTL_ADD, 0, &in);
    char commands[512];
    size_t pending = 0;
    struct epoll_event events[256];
    for (;;) {
        if (s_draining && (all_done() || now_ns() > s_drain_deadline)) end_drain();
        int ready = epoll_wait(s_epoll, events, 256, s_draining ? 10 : 1000);
        if (ready < 0 && errno != EINTR) {
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < ready; i++) {
            if (events[i].data.u64 == STDIN_TAG) {
                ssize_t n = read(0, commands + pending, sizeof commands - 1 - pending);
                if (n == 0) return 0;
                if (n < 0) {
                    if (errno == EAGAIN || errno == EINTR) continue;
                    return 1;
                }
                pending += (size_t)n;
                char *newline;
                while ((newline = memchr(commands, '\n', pending)) != NULL) {
                    *newline = 0;
                    int code = command(commands);
                    if (code != 0) return code;
                    size_t used = (size_t)(newline - commands) + 1;
                    memmove(commands, newline + 1, pending - used);
                    pending -= used;
                }
                if (pending == sizeof commands - 1) {
                    fprintf(stderr, "echo-client: a command line too long\n");
                    return 2;
                }
                continue;
            }
            if (s_connections == NULL || events[i].data.u64 >= (uint64_t)s_count) continue;
            connection *c = &s_connections[events[i].data.u64];
            if (c->done) continue;
            if (events[i].events & EPOLLOUT) flush(c);
            if (!c->done && (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) receive(c);
        }
    }
}
