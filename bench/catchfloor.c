/*
 * catchfloor — the floor of a trapped system call under seccomp user
 * notification, and the per-call cost of whatever supervises a command.
 *
 *   catchfloor loop N [PATH]      stat(PATH) N times (a statx or newfstatat,
 *                                 whatever glibc makes of it; PATH default
 *                                 /etc/hostname); prints "NS_PER_CALL N"
 *   catchfloor floor N [sync|async [noread]]
 *                                 the same loop in a child under a minimal
 *                                 supervisor written in C: receive, read the
 *                                 path with process_vm_readv, CONTINUE —
 *                                 nothing else; "sync" turns on the
 *                                 synchronous wake-up (Linux 6.6); "noread"
 *                                 leaves out the read of the path
 *
 *   catchfloor connect N PORT [sync [self|make]]
 *                                 open("/net/tcp/127.0.0.1:PORT") + close N
 *                                 times in a child whose open and openat trap
 *                                 to a minimal C supervisor: receive, read the
 *                                 path, socket + TCP_NODELAY + a blocking
 *                                 connect to 127.0.0.1:PORT, ADDFD with SEND,
 *                                 close its copy; prints "MEDIAN_NS N" of one
 *                                 open+close
 *                                 (the floor of bench/catch.sh's row (c));
 *                                 "self": the supervisor leaves the connect
 *                                 to the child, which makes it after the open
 *                                 returns (the floor of the fast path's
 *                                 connect in the program's thread);
 *                                 "make": the supervisor writes a 64-byte
 *                                 answer into the child (process_vm_writev)
 *                                 and replies with a plain SEND, no ADDFD;
 *                                 the child makes the socket (socket,
 *                                 TCP_NODELAY) and connects it (the floor of
 *                                 a design where the program makes its
 *                                 socket: bench/RESULTS.md, "sixth pass")
 *
 * The loop is what `wirefs run -- catchfloor loop N` times too, so
 *   (wirefs run) - (floor)   is what the Go supervisor adds per call,
 *   (floor) - (native loop)  is the kernel's round trip, the floor.
 * Only statx, newfstatat, stat and lstat with a path are trapped here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

static int self_connect; /* connect mode "self" */
static int make_socket;  /* connect mode "make" */

static void die(const char *what) {
	fprintf(stderr, "catchfloor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void loop(long n, const char *path) {
	struct stat st;
	for (int i = 0; i < 1000; i++) /* warm-up */
		stat(path, &st);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (stat(path, &st) < 0)
			die("stat");
	double t1 = now_ns();
	printf("%.0f %ld\n", (t1 - t0) / n, n);
}

static int install_filter(int opens) {
	struct sock_filter fopen[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_stat, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	if (opens)
		prog = (struct sock_fprog){.len = sizeof fopen / sizeof fopen[0], .filter = fopen};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("prctl");
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		die("seccomp");
	return fd;
}

static void send_fd(int sock, int fd) {
	char c = 0;
	struct iovec iov = {&c, 1};
	char buf[CMSG_SPACE(sizeof(int))];
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	if (sendmsg(sock, &m, 0) < 0)
		die("sendmsg");
}

static int recv_fd(int sock) {
	char c;
	struct iovec iov = {&c, 1};
	char buf[CMSG_SPACE(sizeof(int))];
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf};
	if (recvmsg(sock, &m, 0) <= 0)
		die("recvmsg");
	int fd;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
	return fd;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* connects: open+close of a /net name, n times (under the supervisor);
 * prints the median in ns. */
static void connects(long n, int port) {
	char name[64];
	snprintf(name, sizeof name, "/net/tcp/127.0.0.1:%d", port);
	double *v = calloc(n, sizeof *v);
	for (long i = -200; i < n; i++) { /* 200 to warm up */
		double t0 = now_ns();
		int fd;
		if (make_socket) {
			/* as the fast-path library: the answer's address in
			 * openat's fifth argument, the socket made here */
			unsigned char answer[64];
			if (syscall(SYS_openat, AT_FDCWD, name, O_RDWR, 0, answer, 0) != 0)
				die("open");
			fd = socket(AF_INET, SOCK_STREAM, 0);
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		} else if ((fd = open(name, O_RDWR)) < 0)
			die("open");
		if (self_connect || make_socket) {
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
			if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
				die("connect");
		}
		close(fd);
		if (i >= 0)
			v[i] = now_ns() - t0;
	}
	qsort(v, n, sizeof *v, cmp_double);
	printf("%.0f %ld\n", v[n / 2], n);
}

/* serve_connect answers a trapped open with a connected socket. */
static void serve_connect(int fd, struct seccomp_notif *req, int port) {
	char path[256];
	struct iovec local = {path, sizeof path};
	int arg = req->data.nr == SYS_open ? 0 : 1;
	struct iovec remote = {(void *)req->data.args[arg], sizeof path};
	process_vm_readv(req->pid, &local, 1, &remote, 1, 0);
	if (make_socket) {
		unsigned char answer[64] = {0};
		struct iovec lw = {answer, sizeof answer}, rw = {(void *)req->data.args[4], sizeof answer};
		process_vm_writev(req->pid, &lw, 1, &rw, 1, 0);
		struct seccomp_notif_resp resp = {.id = req->id};
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		return;
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (!self_connect && connect(s, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect");
	struct seccomp_notif_addfd a = {.id = req->id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = s};
	ioctl(fd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	close(s);
}

static void floor_run(long n, int sync, int readpath, int port) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(sv[0]);
		int fd = install_filter(port != 0);
		send_fd(sv[1], fd);
		close(fd);
		char c;
		if (read(sv[1], &c, 1) != 1) /* the supervisor is ready */
			die("read");
		if (port)
			connects(n, port);
		else
			loop(n, "/etc/hostname");
		fflush(stdout);
		_exit(0);
	}
	close(sv[1]);
	int fd = recv_fd(sv[0]);
	if (sync && ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) < 0)
		die("SECCOMP_IOCTL_NOTIF_SET_FLAGS");
	if (write(sv[0], "", 1) != 1)
		die("write");
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	char path[256];
	for (;;) {
		memset(&req, 0, sizeof req);
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			int status;
			if (errno == EINTR || (errno == ENOENT && waitpid(pid, &status, WNOHANG) == 0))
				continue;
			return; /* the child exited */
		}
		if (port) {
			serve_connect(fd, &req, port);
			continue;
		}
		struct iovec local = {path, sizeof path};
		int arg = req.data.nr == SYS_stat ? 0 : 1;
		struct iovec remote = {(void *)req.data.args[arg], sizeof path};
		if (readpath)
			process_vm_readv(req.pid, &local, 1, &remote, 1, 0);
		resp = (struct seccomp_notif_resp){.id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	int status;
	waitpid(pid, &status, 0);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: catchfloor loop N [PATH] | floor N [sync|async [noread]] | connect N PORT [sync [self|make]]\n");
		return 2;
	}
	long n = atol(argv[2]);
	if (strcmp(argv[1], "loop") == 0)
		loop(n, argc > 3 ? argv[3] : "/etc/hostname");
	else if (strcmp(argv[1], "floor") == 0)
		floor_run(n, argc > 3 && strcmp(argv[3], "sync") == 0, !(argc > 4 && strcmp(argv[4], "noread") == 0), 0);
	else if (strcmp(argv[1], "connect") == 0 && argc > 3) {
		self_connect = argc > 5 && strcmp(argv[5], "self") == 0;
		make_socket = argc > 5 && strcmp(argv[5], "make") == 0;
		floor_run(n, argc > 4 && strcmp(argv[4], "sync") == 0, 1, atoi(argv[3]));
	} else {
		fprintf(stderr, "catchfloor: unknown mode %s\n", argv[1]);
		return 2;
	}
	return 0;
}
