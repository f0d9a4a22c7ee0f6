/*
 * nb — the wirefs micro-benchmark driver.
 *
 * One program, two ways to reach the network, chosen by TARGET:
 *   raw:HOST:PORT   socket(2) + connect(2)            (the sockets API)
 *   file:PATH       open(2) of a wirefs name           (the file API, FUSE door)
 * Everything else (buffers, loops, timing) is the same code.
 *
 * Client modes print one line "MEDIAN_US MEAN_US N" (per operation, µs).
 *   nb connect TARGET -n N            open/connect + close
 *   nb open    TARGET -n N            open/connect alone (close not timed)
 *   nb write16 TARGET -n N            16-byte write(2) on an open connection
 *   nb read16  TARGET -n N            16-byte read(2), data already there
 *   nb xfer    TARGET -s BYTES -r REPS [-b BUF]
 *                                     open, write BYTES, read a 1-byte ack,
 *                                     close: one transfer (as in seed 000 Fig. 5)
 *   nb accept  raw:PORT|file:PATH -c HOST:PORT [-N NETNS] [-H K] -n N
 *                                     accept of a client already waiting: a
 *                                     forked helper (in NETNS) connects, then
 *                                     accept(2) / open(2) of the server name;
 *                                     with -H, K accepted clients stay open
 *                                     meanwhile (a busy concurrent server)
 *   nb spawn   -n N -- CMD ARGS...    fork+exec+wait of CMD (socat peers)
 * Server mode (runs until killed; thread per connection):
 *   nb server drain|hold|feed|sink PORT [-s BYTES] [-R READYFILE]
 *     drain: read until EOF;  feed: write BYTES, then read until EOF;
 *     sink: read BYTES, write one byte (the ack), close;
 *     hold: like drain, but never waits in read(2): it drains without
 *     blocking every 100 ms, so a writer never pays for waking it (the
 *     16-byte write row times the sender's processing only, as seed 000).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void die(const char *what) {
	fprintf(stderr, "nb: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void dief(const char *msg) {
	fprintf(stderr, "nb: %s\n", msg);
	exit(1);
}

static inline double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void report(double *v, int n) {
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof *v, cmp_d);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	printf("%.3f %.3f %d\n", med, sum / n, n);
}

/* ---- targets ---- */

struct target {
	int raw;
	struct sockaddr_in sa;
	const char *path;
};

static void parse_hostport(const char *s, struct sockaddr_in *sa) {
	char host[256];
	const char *colon = strrchr(s, ':');
	if (!colon || colon - s >= (long)sizeof host)
		dief("want HOST:PORT");
	memcpy(host, s, colon - s);
	host[colon - s] = 0;
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		dief("want a numeric IPv4 host");
}

static struct target parse_target(const char *s) {
	struct target t = {0};
	if (!strncmp(s, "raw:", 4)) {
		t.raw = 1;
		parse_hostport(s + 4, &t.sa);
	} else if (!strncmp(s, "file:", 5)) {
		t.path = s + 5;
	} else {
		dief("TARGET is raw:HOST:PORT or file:PATH");
	}
	return t;
}

/* Go's net package (the wirefs daemon) sets TCP_NODELAY on every TCP
 * socket; the raw client does the same so both put the same segments on
 * the wire. */
static int t_open(const struct target *t) {
	if (!t->raw) {
		int fd = open(t->path, O_RDWR);
		if (fd < 0)
			die(t->path);
		return fd;
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&t->sa, sizeof t->sa) < 0)
		die("connect");
	return fd;
}

static void write_all(int fd, const char *buf, size_t len) {
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		buf += n;
		len -= n;
	}
}

/* ---- client modes ---- */

static void m_connect(struct target t, int n, int warm) {
	double *v = calloc(n, sizeof *v);
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();
		int fd = t_open(&t);
		close(fd);
		double t1 = now_us();
		if (i >= 0)
			v[i] = t1 - t0;
	}
	report(v, n);
}

static void m_open(struct target t, int n, int warm) {
	double *v = calloc(n, sizeof *v);
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();
		int fd = t_open(&t);
		double t1 = now_us();
		close(fd);
		if (i >= 0)
			v[i] = t1 - t0;
	}
	report(v, n);
}

static void m_write16(struct target t, int n, int warm) {
	double *v = calloc(n, sizeof *v);
	char buf[16];
	memset(buf, 'w', sizeof buf);
	int fd = t_open(&t);
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();
		ssize_t k = write(fd, buf, sizeof buf);
		double t1 = now_us();
		if (k != (ssize_t)sizeof buf)
			die("write16");
		if (i >= 0)
			v[i] = t1 - t0;
	}
	close(fd);
	report(v, n);
}

/* The feed server sends (warm+n)*16 bytes at once; wait until they are all
 * here (in our socket, or in the daemon's), then time each 16-byte read. */
static void m_read16(struct target t, int n, int warm, int settle_ms) {
	double *v = calloc(n, sizeof *v);
	char buf[16];
	int fd = t_open(&t);
	usleep(settle_ms * 1000);
	if (t.raw) {
		int avail = 0;
		for (int i = 0; i < 1000; i++) {
			ioctl(fd, FIONREAD, &avail);
			if (avail >= (warm + n) * 16)
				break;
			usleep(1000);
		}
		if (avail < (warm + n) * 16)
			dief("read16: feed data did not arrive");
	}
	for (int i = -warm; i < n; i++) {
		double t0 = now_us();
		ssize_t k = read(fd, buf, sizeof buf);
		double t1 = now_us();
		if (k != (ssize_t)sizeof buf) {
			fprintf(stderr, "nb: read16: short read %zd at %d\n", k, i);
			exit(1);
		}
		if (i >= 0)
			v[i] = t1 - t0;
	}
	close(fd);
	report(v, n);
}

static void m_xfer(struct target t, long long bytes, int reps, size_t bufsz, int warm) {
	double *v = calloc(reps, sizeof *v);
	char *buf = malloc(bufsz);
	memset(buf, 'x', bufsz);
	for (int i = -warm; i < reps; i++) {
		double t0 = now_us();
		int fd = t_open(&t);
		long long left = bytes;
		while (left > 0) {
			size_t chunk = left < (long long)bufsz ? (size_t)left : bufsz;
			write_all(fd, buf, chunk);
			left -= chunk;
		}
		char ack;
		ssize_t k;
		while ((k = read(fd, &ack, 1)) < 0 && errno == EINTR)
			;
		if (k != 1)
			dief("xfer: no ack from the server");
		close(fd);
		double t1 = now_us();
		if (i >= 0)
			v[i] = t1 - t0;
	}
	report(v, reps);
}

/* accept: the helper lives in the peer namespace and connects on demand. */
static void helper(int cmd, int ack, const char *netns, struct sockaddr_in sa) {
	if (netns) {
		int nfd = open(netns, O_RDONLY | O_CLOEXEC);
		if (nfd < 0 || setns(nfd, CLONE_NEWNET) < 0)
			die(netns);
		close(nfd);
	}
	int s = -1;
	char c;
	while (read(cmd, &c, 1) == 1 && (c == 'c' || c == 'h')) {
		if (s >= 0 && c == 'c')
			close(s); /* 'h': keep the previous client open */
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0)
			die("helper connect");
		if (write(ack, "k", 1) != 1)
			die("helper ack");
	}
	_exit(0);
}

static void m_accept(const char *spec, const char *peer, const char *netns, int n, int warm, int settle_us, int hold) {
	struct sockaddr_in sa;
	parse_hostport(peer, &sa);
	int lfd = -1, bound = -1;
	const char *path = NULL;
	if (!strncmp(spec, "raw:", 4)) {
		struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = htons(atoi(spec + 4))};
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		int one = 1;
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(lfd, (struct sockaddr *)&la, sizeof la) < 0 || listen(lfd, 128) < 0)
			die("listen");
	} else if (!strncmp(spec, "file:", 5)) {
		path = spec + 5;
		bound = open(path, O_RDWR); /* binds and listens */
		if (bound < 0)
			die(path);
	} else {
		dief("accept: raw:PORT or file:PATH");
	}
	int cmd[2], ack[2];
	if (pipe(cmd) < 0 || pipe(ack) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(cmd[1]);
		close(ack[0]);
		if (lfd >= 0)
			close(lfd);
		if (bound >= 0)
			close(bound);
		helper(cmd[0], ack[1], netns, sa);
	}
	close(cmd[0]);
	close(ack[1]);
	/* a busy server: hold clients open (the helper keeps its ends too) */
	for (int i = 0; i < hold; i++) {
		char c;
		if (write(cmd[1], "h", 1) != 1 || read(ack[0], &c, 1) != 1)
			dief("accept: helper died");
		int fd = path ? open(path, O_RDWR) : accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept/open (held)");
	}
	double *v = calloc(n, sizeof *v);
	for (int i = -warm; i < n; i++) {
		char c;
		if (write(cmd[1], i == -warm && hold ? "h" : "c", 1) != 1 || read(ack[0], &c, 1) != 1)
			dief("accept: helper died");
		usleep(settle_us); /* let the client land in the listen queue */
		double t0 = now_us();
		int fd = path ? open(path, O_RDWR) : accept(lfd, NULL, NULL);
		double t1 = now_us();
		if (fd < 0)
			die("accept/open");
		close(fd);
		if (i >= 0)
			v[i] = t1 - t0;
	}
	close(cmd[1]);
	waitpid(pid, NULL, 0);
	if (bound >= 0)
		close(bound);
	if (lfd >= 0)
		close(lfd);
	report(v, n);
}

static void m_spawn(int n, int warm, char **argv) {
	double *v = calloc(n, sizeof *v);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	for (int i = -warm; i < n; i++) {
		pid_t pid;
		int st;
		double t0 = now_us();
		if ((errno = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)) != 0)
			die(argv[0]);
		if (waitpid(pid, &st, 0) < 0)
			die("waitpid");
		double t1 = now_us();
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "nb: spawn: %s failed (status %d)\n", argv[0], st);
			exit(1);
		}
		if (i >= 0)
			v[i] = t1 - t0;
	}
	report(v, n);
}

/* ---- server ---- */

static int srv_mode; /* 0 drain, 1 feed, 2 sink, 3 hold */
static long long srv_bytes;

static void *serve(void *arg) {
	int fd = (int)(intptr_t)arg;
	size_t bufsz = 1 << 20;
	char *buf = malloc(bufsz);
	ssize_t k;
	if (srv_mode == 1) {
		memset(buf, 'f', bufsz);
		long long left = srv_bytes;
		while (left > 0) {
			size_t chunk = left < (long long)bufsz ? (size_t)left : bufsz;
			ssize_t w = write(fd, buf, chunk);
			if (w <= 0)
				goto out;
			left -= w;
		}
	}
	if (srv_mode == 2) {
		long long left = srv_bytes;
		while (left > 0 && (k = read(fd, buf, bufsz)) > 0)
			left -= k;
		if (left <= 0)
			(void)!write(fd, "A", 1);
		goto out;
	}
	if (srv_mode == 3) {
		for (;;) {
			usleep(100 * 1000);
			while ((k = recv(fd, buf, bufsz, MSG_DONTWAIT)) > 0)
				;
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
				goto out;
		}
	}
	while ((k = read(fd, buf, bufsz)) > 0)
		;
out:
	close(fd);
	free(buf);
	return NULL;
}

static void m_server(const char *mode, int port, const char *ready) {
	srv_mode = !strcmp(mode, "drain") ? 0 : !strcmp(mode, "feed") ? 1 : !strcmp(mode, "sink") ? 2 : !strcmp(mode, "hold") ? 3 : -1;
	if (srv_mode < 0)
		dief("server: drain, hold, feed or sink");
	signal(SIGPIPE, SIG_IGN);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (bind(lfd, (struct sockaddr *)&la, sizeof la) < 0 || listen(lfd, 1024) < 0)
		die("server listen");
	if (ready) {
		FILE *f = fopen(ready, "w");
		if (f)
			fclose(f);
	}
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 << 10);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		pthread_t th;
		if (pthread_create(&th, &at, serve, (void *)(intptr_t)fd) != 0)
			die("pthread_create");
	}
}

static void usage(void) {
	fprintf(stderr, "usage: see the comment at the top of bench/nb.c\n");
	exit(2);
}

int main(int argc, char **argv) {
	if (argc < 2)
		usage();
	const char *mode = argv[1];
	int n = 500, reps = 5, warm = -1, settle = 2000, hold = 0;
	long long bytes = 0;
	size_t bufsz = 1 << 20;
	const char *peer = NULL, *netns = NULL, *ready = NULL;
	/* getopt over argv[1..]: the mode plays the program name, and GNU
	 * getopt lets options follow the positional arguments. */
	int c;
	argc--;
	argv++;
	while ((c = getopt(argc, argv, "n:r:s:b:w:c:N:R:S:H:")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 's': bytes = atoll(optarg); break;
		case 'b': bufsz = atol(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'c': peer = optarg; break;
		case 'N': netns = optarg; break;
		case 'R': ready = optarg; break;
		case 'S': settle = atoi(optarg); break;
		case 'H': hold = atoi(optarg); break;
		default: usage();
		}
	}
	signal(SIGPIPE, SIG_IGN);
	char **rest = argv + optind;
	int nrest = argc - optind;
	if (!strcmp(mode, "server")) {
		if (nrest < 2)
			usage();
		srv_bytes = bytes;
		m_server(rest[0], atoi(rest[1]), ready);
	} else if (!strcmp(mode, "spawn")) {
		if (nrest < 1)
			usage();
		m_spawn(n, warm < 0 ? 3 : warm, rest);
	} else if (!strcmp(mode, "accept")) {
		if (nrest < 1 || !peer)
			usage();
		m_accept(rest[0], peer, netns, n, warm < 0 ? 20 : warm, settle, hold);
	} else {
		if (nrest < 1)
			usage();
		struct target t = parse_target(rest[0]);
		if (!strcmp(mode, "connect"))
			m_connect(t, n, warm < 0 ? 50 : warm);
		else if (!strcmp(mode, "open"))
			m_open(t, n, warm < 0 ? 50 : warm);
		else if (!strcmp(mode, "write16"))
			m_write16(t, n, warm < 0 ? 100 : warm);
		else if (!strcmp(mode, "read16"))
			m_read16(t, n, warm < 0 ? 100 : warm, 200);
		else if (!strcmp(mode, "xfer"))
			m_xfer(t, bytes, reps, bufsz, warm < 0 ? 1 : warm);
		else
			usage();
	}
	return 0;
}
