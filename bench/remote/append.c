// append: the writer and checker of bench/remote/append.sh.
//
//   append PATH SERVERPATH K N DEADLINE SETTLE PRE
//
// Makes SERVERPATH hold PRE records (written directly, not through PATH;
// PRE = 0 removes it), then forks K appenders on PATH. Appender i (tag
// "w<i>") does N cycles of open(O_WRONLY|O_APPEND|O_CREAT), write of one
// 50-byte record, close, and stops early at DEADLINE seconds after the
// start. The clock stops when every appender is done and SERVERPATH holds
// every byte (polled for at most SETTLE seconds, as bench/remote/run.sh's
// write row). Then SERVERPATH is read and checked: every record (the PRE
// ones and every appended one) must be there exactly once, whole, each
// appender's in order, with no NUL byte anywhere.
//
// A record is the e2e test's (e2e/append_test.go): "%s %08d " of tag and
// sequence number, padded with 'x' to 49 bytes, then '\n'.
//
//   append check SERVERPATH K N PRE
//
// only checks SERVERPATH, as if each of K appenders had done N cycles.
//
// Prints one line: cycles seconds lost nul cut settled errors
//   cycles   records appended (sum over the appenders)
//   seconds  from the start to the last close (and the server's size)
//   lost     records missing, duplicated, damaged or out of order, plus
//            every line that is not a record
//   nul      NUL bytes in the server's file
//   cut      1 if an appender stopped at DEADLINE before N cycles
//   settled  1 if the server's size reached the expected size in time
//   errors   appenders that stopped on an error (on stderr: which)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REC 50
#define MAXW 64

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void record(char *buf, const char *tag, long seq) {
	int n = snprintf(buf, REC + 1, "%s %08ld ", tag, seq);
	memset(buf + n, 'x', REC - 1 - n);
	buf[REC - 1] = '\n';
}

struct shared {
	long count[MAXW];
	int err[MAXW];
};

static void appender(const char *path, int i, long n, double deadline, struct shared *sh) {
	char tag[16], buf[REC + 1];
	snprintf(tag, sizeof tag, "w%d", i);
	for (long j = 0; j < n && now() < deadline; j++) {
		record(buf, tag, j);
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd < 0) { sh->err[i] = errno; fprintf(stderr, "append: %s: open: %s\n", tag, strerror(errno)); _exit(1); }
		ssize_t w = write(fd, buf, REC);
		if (w != REC) {
			sh->err[i] = w < 0 ? errno : EIO;
			fprintf(stderr, "append: %s: write returned %zd: %s\n", tag, w, w < 0 ? strerror(errno) : "short");
			_exit(1);
		}
		if (close(fd) != 0) { sh->err[i] = errno; fprintf(stderr, "append: %s: close: %s\n", tag, strerror(errno)); _exit(1); }
		sh->count[i] = j + 1;
	}
	_exit(0);
}

// check reads the server's file and counts what is wrong in it.
static long check(const char *server, int k, const long *count, long pre, long *nul) {
	FILE *f = fopen(server, "rb");
	if (!f) { fprintf(stderr, "append: check %s: %s\n", server, strerror(errno)); return -1; }
	struct stat st;
	fstat(fileno(f), &st);
	char *data = malloc(st.st_size + 1);
	size_t len = fread(data, 1, st.st_size, f);
	fclose(f);
	*nul = 0;
	for (size_t i = 0; i < len; i++) *nul += data[i] == 0;
	// seen[w][seq]: how often each record was found; w == k is PRE
	long *seen[MAXW + 1], next[MAXW + 1], bad = 0, disorder = 0;
	for (int w = 0; w <= k; w++) {
		long n = w < k ? count[w] : pre;
		seen[w] = calloc(n + 1, sizeof(long));
		next[w] = 0;
	}
	char want[REC + 1];
	size_t off = 0;
	while (off < len) {
		char *nl = memchr(data + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (data + off)) + 1 : len - off;
		char tag[16];
		long seq = -1;
		int w = -1;
		if (l == REC && sscanf(data + off, "%15s %ld", tag, &seq) == 2 && seq >= 0) {
			if (strcmp(tag, "p") == 0) w = k;
			else if (tag[0] == 'w') { char *e; long x = strtol(tag + 1, &e, 10); if (*e == 0 && x >= 0 && x < k) w = x; }
		}
		if (w >= 0) {
			long n = w < k ? count[w] : pre;
			record(want, w < k ? tag : "p", seq);
			if (seq >= n || memcmp(want, data + off, REC) != 0) w = -1;
		}
		if (w < 0) {
			if (bad < 5) fprintf(stderr, "append: %s: damaged line at byte %zu: %.*s\n", server, off, (int)(l > 60 ? 60 : l), data + off);
			bad++;
		} else {
			if (seq != next[w]) {
				if (disorder < 5) fprintf(stderr, "append: %s: at byte %zu: %s %ld after %ld\n", server, off, tag, seq, next[w] - 1);
				disorder++;
			}
			next[w] = seq + 1;
			seen[w][seq]++;
		}
		off += l;
	}
	long missing = 0, dup = 0, total = pre;
	for (int w = 0; w < k; w++) total += count[w];
	for (int w = 0; w <= k; w++) {
		long n = w < k ? count[w] : pre;
		for (long s = 0; s < n; s++) {
			if (seen[w][s] == 0) missing++;
			else if (seen[w][s] > 1) dup += seen[w][s] - 1;
		}
		free(seen[w]);
	}
	free(data);
	if (missing || dup || bad || disorder || *nul)
		fprintf(stderr, "append: %s: %ld missing, %ld duplicated, %ld damaged lines, %ld out of order, %ld NUL bytes (%zu bytes, want %ld)\n",
			server, missing, dup, bad, disorder, *nul, len, REC * total);
	return missing + dup + bad + disorder;
}

int main(int argc, char **argv) {
	if (argc == 6 && strcmp(argv[1], "check") == 0) {
		long count[MAXW], nul = 0;
		int k = atoi(argv[3]);
		if (k < 1 || k > MAXW) return 2;
		for (int i = 0; i < k; i++) count[i] = atol(argv[4]);
		long lost = check(argv[2], k, count, atol(argv[5]), &nul);
		printf("lost %ld nul %ld\n", lost, nul);
		return lost != 0 || nul != 0;
	}
	if (argc != 8) {
		fprintf(stderr, "usage: append PATH SERVERPATH K N DEADLINE SETTLE PRE\n");
		return 2;
	}
	const char *path = argv[1], *server = argv[2];
	int k = atoi(argv[3]);
	long n = atol(argv[4]), pre = atol(argv[7]);
	double limit = atof(argv[5]), settle = atof(argv[6]);
	if (k < 1 || k > MAXW || n < 1 || pre < 0) { fprintf(stderr, "append: bad arguments\n"); return 2; }

	if (pre > 0) {
		FILE *f = fopen(server, "wb");
		if (!f) { fprintf(stderr, "append: %s: %s\n", server, strerror(errno)); return 1; }
		char buf[REC + 1];
		for (long s = 0; s < pre; s++) { record(buf, "p", s); fwrite(buf, 1, REC, f); }
		if (fclose(f) != 0) { fprintf(stderr, "append: %s: %s\n", server, strerror(errno)); return 1; }
	} else if (unlink(server) != 0 && errno != ENOENT) {
		fprintf(stderr, "append: %s: %s\n", server, strerror(errno));
		return 1;
	}

	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) { perror("append: mmap"); return 1; }
	memset(sh, 0, sizeof *sh);
	fflush(NULL);
	double t0 = now(), deadline = t0 + limit;
	for (int i = 0; i < k; i++) {
		pid_t p = fork();
		if (p < 0) { perror("append: fork"); return 1; }
		if (p == 0) appender(path, i, n, deadline, sh);
	}
	while (wait(NULL) > 0 || errno == EINTR) {}
	long total = 0;
	int cut = 0, errs = 0;
	for (int i = 0; i < k; i++) {
		total += sh->count[i];
		if (sh->err[i]) errs++;
		else if (sh->count[i] < n) cut = 1;
	}
	// until the server holds every byte
	off_t want = (off_t)REC * (pre + total);
	int settled = 0;
	for (double end = now() + settle;;) {
		struct stat st;
		if (stat(server, &st) == 0 && st.st_size == want) { settled = 1; break; }
		if (now() > end) break;
		usleep(1000);
	}
	double secs = now() - t0;
	if (!settled) fprintf(stderr, "append: %s: the server's size did not reach %ld bytes within %g s\n", server, (long)want, settle);
	long nul = 0, lost = check(server, k, sh->count, pre, &nul);
	printf("%ld %.6f %ld %ld %d %d %d\n", total, secs, lost, nul, cut, settled, errs);
	return lost < 0;
}
