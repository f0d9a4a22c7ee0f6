// The catcher's fast path (wirefs run, internal/door/catch/fastpath.go):
// preloaded into dynamically linked programs, it makes the path calls whose
// name cannot be a namespace name through a syscall instruction at a fixed
// address that the seccomp filter lets through, so that they never trap.
// Every other call is made as the C library would make it, and traps as
// before. Static programs never load it and keep trapping: nothing depends
// on it but speed.
//
// A name is local here only when the supervisor would find it local
// without looking at the program (see local below; TestFastPathAgrees
// holds the two together); the supervisor would answer such a call
// CONTINUE. The names are given by the environment:
//   WIREFS_CATCH_FIRSTS  "/net/src": the first components of every local
//                        name the namespace is shown at;
//   WIREFS_CATCH_URL     "1" when URL names ("sftp://h/x") are caught.
// Without WIREFS_CATCH_FIRSTS (a program that cleaned its environment but
// kept LD_PRELOAD), or if the trampoline's page cannot be mapped, every
// call traps.
//
// Build: see gen.go in the parent directory (cc, no other dependency).

#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// The trampoline's address and layout; fastpath.go holds the same
// numbers (the filter allows a call whose instruction pointer, the
// address after the syscall instruction, is trampAddr + trampRet).
#define TRAMP_ADDR 0x100000000000UL
static const unsigned char tramp_code[] = {
	0x48, 0x89, 0xf8,             // mov %rdi,%rax
	0x48, 0x89, 0xf7,             // mov %rsi,%rdi
	0x48, 0x89, 0xd6,             // mov %rdx,%rsi
	0x48, 0x89, 0xca,             // mov %rcx,%rdx
	0x4d, 0x89, 0xc2,             // mov %r8,%r10
	0x4d, 0x89, 0xc8,             // mov %r9,%r8
	0x4c, 0x8b, 0x4c, 0x24, 0x08, // mov 0x8(%rsp),%r9
	0x0f, 0x05,                   // syscall (returns to TRAMP_ADDR + 25)
	0xc3,                         // ret
};

typedef long (*tramp_fn)(long nr, long a, long b, long c, long d, long e, long f);
static tramp_fn tramp; // NULL: no fast path

// A second copy of the trampoline, at TRAMP_ADDR + TRAMP_CAUGHT, makes
// the opens of names that are not local. The filter traps calls from it
// as any other; what its address tells the supervisor is that this
// library made the open and takes a connect answer: the open's fifth
// argument is the answer's address, its sixth one of the magic numbers
// below (fastpath.go's trampConnectIP, connectMagic, socketMagic).
#define TRAMP_CAUGHT 32
static tramp_fn tramp_caught;

// connect_answer is the answer to an open made through tramp_caught; this
// is the one description of its layout (fastpath.go writes it at the
// offsets named answer* there, TestConnectAnswerLayout compiles this
// struct to check them). The library sets addrlen to 0 before the open.
//   kind ANSWER_CONNECT: the open returned a descriptor, ready as it is
//     when addrlen stays 0, else a socket to connect to addr (new,
//     blocking, set up and bound by the daemon, its connect timeout its
//     TCP_USER_TIMEOUT).
//   kind ANSWER_MAKE: the open returned SOCKET_MAGIC, no descriptor: the
//     library makes the socket itself (socket(2) of addr's family, type,
//     protocol; TCP_NODELAY if nodelay; TCP_USER_TIMEOUT user_timeout ms
//     if not 0) and connects it to addr — unless the socket's network
//     namespace is not the supervisor's (netns, its SO_NETNS_COOKIE),
//     when the open is made again asking for a socket the daemon makes.
//     With OPT_REUSABLE the library keeps the recipe for the name (see
//     keep below).
struct connect_answer {
	uint32_t addrlen;       // of addr; 0: no address
	uint32_t kind;          // ANSWER_CONNECT or ANSWER_MAKE
	unsigned char addr[32]; // struct sockaddr_in or sockaddr_in6
	uint64_t netns;         // ANSWER_MAKE: the supervisor's SO_NETNS_COOKIE
	int32_t type;           // ANSWER_MAKE: socket(2)'s type
	int32_t protocol;       // and protocol
	uint32_t options;       // ANSWER_MAKE: OPT_NODELAY, OPT_REUSABLE
	uint32_t user_timeout;  // TCP_USER_TIMEOUT (ms) while connecting, 0: none
};
_Static_assert(sizeof(struct connect_answer) == 64, "fastpath.go's answerSize");
#define ANSWER_CONNECT 0
#define ANSWER_MAKE 1
#define OPT_NODELAY 1  // set TCP_NODELAY
#define OPT_REUSABLE 2 // the name always gives this recipe (ns.SocketRecipe.Reusable)
// CONNECT_MAGIC: the library connects a socket it is given (ANSWER_CONNECT
// only); SOCKET_MAGIC: it also makes one (ANSWER_MAKE).
#define CONNECT_MAGIC 0x776663616e737772L // "wfcanswr"
#define SOCKET_MAGIC 0x7766736f636b6574L  // "wfsocket"

// netns_differs is set once a socket made here was found in another
// network namespace than the supervisor's (this program, or one of its
// threads, entered one): from then on every open asks for the daemon's
// socket, as before the library made its own — correct in every
// namespace, only slower.
static int netns_differs;

#define MAX_FIRSTS 64
static const char *firsts[MAX_FIRSTS];
static size_t first_len[MAX_FIRSTS];
static int nfirsts;
static int urls;

// isfirst says whether the component p[0:n] is a root's first component.
static int isfirst(const char *p, size_t n) {
	for (int i = 0; i < nfirsts; i++)
		if (first_len[i] == n && memcmp(firsts[i], p, n) == 0)
			return 1;
	return 0;
}

// local says whether the name p cannot be a namespace name. An absolute
// name is one when the first component of its lexically clean form is
// not a root's (the supervisor's whereIs cleans it with path.Clean and
// matches the roots, which all begin with one of firsts); a relative one
// when names.go's mayBeURL and relMayReach say so (one with ".." needs
// the working directory, which only the supervisor looks at).
static int local(const char *p) {
	if (p == NULL || p[0] == 0)
		return 1; // the supervisor lets both run: EFAULT, or a descriptor's call
	if (p[0] == '/') {
		const char *first = NULL;
		size_t first_n = 0;
		int depth = 0; // of the clean name so far
		for (;;) {
			while (*p == '/')
				p++;
			if (*p == 0)
				break;
			size_t n = strcspn(p, "/");
			if (n == 2 && p[0] == '.' && p[1] == '.') {
				if (depth > 0)
					depth--;
			} else if (!(n == 1 && p[0] == '.')) {
				if (depth++ == 0) {
					first = p;
					first_n = n;
				}
			}
			p += n;
		}
		return depth == 0 || !isfirst(first, first_n); // depth 0: "/"
	}
	if (strstr(p, "..") != NULL)
		return 0;
	if (urls) {
		const char *u = strstr(p, "://");
		if (u != NULL && u > p && memchr(p, '/', u - p) == NULL)
			return 0;
	}
	for (;;) {
		size_t n = strcspn(p, "/");
		if (n != 0 && !(n == 1 && p[0] == '.'))
			return !isfirst(p, n);
		if (p[n] == 0)
			return 1; // the base directory itself
		p += n + 1;
	}
}

// raw makes a system call from this library's own syscall instruction,
// which the filter traps as it would the C library's.
static long raw(long nr, long a, long b, long c, long d, long e) {
	return syscall(nr, a, b, c, d, e);
}

// fast makes call nr through the trampoline when name is local (or the
// call is relative to a real descriptor, which the filter never traps),
// else traps. It returns as the C library's wrappers do.
static long fast(int dirfd, const char *name, long nr, long a, long b, long c, long d, long e) {
	if (tramp == NULL || (dirfd == AT_FDCWD && !local(name)))
		return raw(nr, a, b, c, d, e);
	long r = tramp(nr, a, b, c, d, e, 0);
	if (r < 0 && r > -4096) {
		errno = -r;
		return -1;
	}
	return r;
}

// The C library's wrappers, found once: opens without the trampoline
// (they are cancellation points there; through the trampolines they are
// not), and what the library leaves to the C library.
static int (*next_openat)(int, const char *, int, ...);
static char *(*next_realpath)(const char *, char *);
static char *(*next_realpath_chk)(const char *, char *, size_t);
static DIR *(*next_opendir)(const char *);
static int (*next_euidaccess)(const char *, int);

__attribute__((constructor)) static void init(void) {
	next_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
	next_realpath = (char *(*)(const char *, char *))dlsym(RTLD_NEXT, "realpath");
	next_realpath_chk = (char *(*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "__realpath_chk");
	next_opendir = (DIR * (*)(const char *)) dlsym(RTLD_NEXT, "opendir");
	next_euidaccess = (int (*)(const char *, int))dlsym(RTLD_NEXT, "euidaccess");
	const char *f = getenv("WIREFS_CATCH_FIRSTS");
	if (f == NULL || f[0] != '/')
		return;
	const char *u = getenv("WIREFS_CATCH_URL");
	urls = u != NULL && strcmp(u, "1") == 0;
	while (*f == '/') {
		f++;
		size_t n = strcspn(f, "/");
		if (n == 0 || nfirsts == MAX_FIRSTS)
			return; // malformed or too many: no fast path
		firsts[nfirsts] = f;
		first_len[nfirsts++] = n;
		f += n;
	}
	void *page = mmap((void *)TRAMP_ADDR, 4096, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (page == MAP_FAILED)
		return;
	if (page != (void *)TRAMP_ADDR) { // a kernel without MAP_FIXED_NOREPLACE
		munmap(page, 4096);
		return;
	}
	memcpy(page, tramp_code, sizeof tramp_code);
	memcpy((char *)page + TRAMP_CAUGHT, tramp_code, sizeof tramp_code);
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) {
		munmap(page, 4096);
		return;
	}
	tramp = (tramp_fn)page;
	tramp_caught = (tramp_fn)((char *)page + TRAMP_CAUGHT);
}

static mode_t open_mode(int flags, va_list ap) {
	if (flags & O_CREAT || (flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, mode_t);
	return 0;
}

// connect_answered connects the socket fd to the answer's address, here,
// in the program's thread, as connect(2) would: the wait for the server
// is this thread's, and a signal is the kernel's affair (a handler with
// SA_RESTART resumes the connect, one without makes it — and the open —
// fail with EINTR). A failed connect closes the socket and the open fails
// with its errno (ECONNREFUSED, ETIMEDOUT from the user timeout, ...); a
// connected one gets its user timeout cleared, as the daemon clears its
// connect timeout. The connect is raw, not the trampoline's: wirefs nice
// traps connect to pace the socket.
static int connect_answered(long fd, const struct connect_answer *a) {
	if (raw(SYS_connect, fd, (long)a->addr, a->addrlen, 0, 0) != 0) {
		int e = errno;
		raw(SYS_close, fd, 0, 0, 0, 0);
		errno = e;
		return -1;
	}
	int zero = 0;
	raw(SYS_setsockopt, fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (long)&zero, sizeof zero);
	return fd;
}

static int open_caught(const char *name, int flags, mode_t mode);

// Recipes the supervisor says a name always gives (OPT_REUSABLE: a
// literal address, nothing resolved, nothing of the caller's) are kept
// here by the name and the flags of the open that got them, and a later
// open of the same name with the same flags makes its socket from the
// kept recipe without trapping: reconnecting to a name costs what
// socket(2) and connect(2) cost, and the daemon decided what the name
// means once. The namespace of a wirefs run does not change while it
// runs; a fork keeps the recipes as it keeps the namespace, an exec
// starts with none. Only absolute names are kept (a relative one
// depends on the working directory), and only while sockets made here
// are in the supervisor's network namespace (netns_differs).
//
// The table is taken with a try-lock, never waited for: open is
// async-signal-safe, and a signal handler's open while its thread holds
// the table must not wait for itself. An open that finds the table
// taken traps, as it would without it.
#define KEPT 16
#define KEPT_NAME 128
struct kept_recipe {
	char name[KEPT_NAME];
	int flags; // the open's, but O_CLOEXEC
	struct connect_answer a;
};
static struct kept_recipe kept[KEPT];
static int nkept, next_kept;
static char kept_taken;

static int take_kept(void) { return !__atomic_test_and_set(&kept_taken, __ATOMIC_ACQUIRE); }
static void give_kept(void) { __atomic_clear(&kept_taken, __ATOMIC_RELEASE); }

// find_kept returns the index of the recipe kept for name and flags, or
// -1; the caller holds the table.
static int find_kept(const char *name, int flags) {
	for (int i = 0; i < nkept; i++)
		if (kept[i].flags == flags && strcmp(kept[i].name, name) == 0)
			return i;
	return -1;
}

// kept_recipe copies the recipe kept for an open of name with flags to
// *a, and says whether there is one.
static int kept_recipe(const char *name, int flags, struct connect_answer *a) {
	if (name[0] != '/' || __atomic_load_n(&netns_differs, __ATOMIC_RELAXED) || !take_kept())
		return 0;
	int i = find_kept(name, flags & ~O_CLOEXEC);
	if (i >= 0)
		*a = kept[i].a;
	give_kept();
	return i >= 0;
}

// keep keeps the recipe a for opens of name with flags, in place of the
// oldest one when the table is full.
static void keep(const char *name, int flags, const struct connect_answer *a) {
	size_t n = strlen(name);
	if (name[0] != '/' || n >= KEPT_NAME || !take_kept())
		return;
	flags &= ~O_CLOEXEC;
	if (find_kept(name, flags) < 0) {
		struct kept_recipe *k = &kept[next_kept];
		next_kept = (next_kept + 1) % KEPT;
		if (nkept < KEPT)
			nkept++;
		memcpy(k->name, name, n + 1);
		k->flags = flags;
		k->a = *a;
	}
	give_kept();
}

// make_socket makes the socket of an ANSWER_MAKE answer, close-on-exec if
// the open asked for it (as the daemon's would have been given), and
// connects it. Its system calls but connect are the trampoline's: none
// is one the filter traps.
static int make_socket(const struct connect_answer *a, const char *name, int flags, mode_t mode) {
	sa_family_t family;
	memcpy(&family, a->addr, sizeof family);
	long fd = tramp(SYS_socket, family, a->type | (flags & O_CLOEXEC ? SOCK_CLOEXEC : 0), a->protocol, 0, 0, 0);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	uint64_t netns = 0;
	socklen_t len = sizeof netns;
	if (tramp(SYS_getsockopt, fd, SOL_SOCKET, SO_NETNS_COOKIE, (long)&netns, (long)&len, 0) != 0 || netns != a->netns) {
		tramp(SYS_close, fd, 0, 0, 0, 0, 0);
		__atomic_store_n(&netns_differs, 1, __ATOMIC_RELAXED);
		return open_caught(name, flags, mode);
	}
	int one = 1;
	long r = 0;
	if (a->options & OPT_NODELAY)
		r = tramp(SYS_setsockopt, fd, IPPROTO_TCP, TCP_NODELAY, (long)&one, sizeof one, 0);
	if (r == 0 && a->user_timeout != 0)
		r = tramp(SYS_setsockopt, fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (long)&a->user_timeout, sizeof a->user_timeout, 0);
	if (r != 0) {
		tramp(SYS_close, fd, 0, 0, 0, 0, 0);
		errno = -r;
		return -1;
	}
	return connect_answered(fd, a);
}

// open_caught makes an open that traps, through tramp_caught, and
// connects the socket the supervisor answers with, or makes and connects
// the one it describes.
static int open_caught(const char *name, int flags, mode_t mode) {
	struct connect_answer a;
	a.addrlen = 0;
	a.kind = ANSWER_CONNECT;
	long magic = __atomic_load_n(&netns_differs, __ATOMIC_RELAXED) ? CONNECT_MAGIC : SOCKET_MAGIC;
	long fd = tramp_caught(SYS_openat, AT_FDCWD, (long)name, flags, mode, (long)&a, magic);
	if (fd == SOCKET_MAGIC) {
		if (a.kind != ANSWER_MAKE || a.addrlen < sizeof(sa_family_t) || a.addrlen > sizeof a.addr) {
			errno = EPROTO; // not reached: the supervisor answers so only with its recipe
			return -1;
		}
		if (a.options & OPT_REUSABLE)
			keep(name, flags, &a);
		return make_socket(&a, name, flags, mode);
	}
	if (fd < 0 && fd > -4096) {
		errno = -fd;
		return -1;
	}
	// An open restarted after a signal keeps what an earlier answer
	// wrote: only a connect answer's address means "connect".
	if (a.kind != ANSWER_CONNECT || a.addrlen == 0 || a.addrlen > sizeof a.addr)
		return fd;
	return connect_answered(fd, &a);
}

static int do_openat(int dirfd, const char *name, int flags, mode_t mode) {
	if (tramp != NULL && (dirfd != AT_FDCWD || local(name)))
		return fast(dirfd, name, SYS_openat, dirfd, (long)name, flags, mode, 0);
	if (tramp != NULL) {
		struct connect_answer a;
		if (kept_recipe(name, flags, &a))
			return make_socket(&a, name, flags, mode);
		return open_caught(name, flags, mode);
	}
	if (next_openat != NULL)
		return next_openat(dirfd, name, flags, mode);
	return raw(SYS_openat, dirfd, (long)name, flags, mode, 0);
}

int open(const char *name, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, name, flags, mode);
}

int openat(int dirfd, const char *name, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, name, flags, mode);
}

// On x86-64 the *64 names are the same calls (O_LARGEFILE is implied, and
// struct stat64 is struct stat).
int open64(const char *name, int flags, ...) __attribute__((alias("open")));
int openat64(int dirfd, const char *name, int flags, ...) __attribute__((alias("openat")));

static int do_fstatat(int dirfd, const char *name, struct stat *st, int flags) {
	return fast(dirfd, name, SYS_newfstatat, dirfd, (long)name, (long)st, flags, 0);
}

// opendir opens a local directory as glibc's does (the same flags), then
// makes the stream with fdopendir: ls -R opens every directory so, from
// inside glibc.
DIR *opendir(const char *name) {
	if (tramp == NULL || name[0] == 0 || !local(name)) {
		if (next_opendir == NULL) {
			errno = ENOSYS;
			return NULL;
		}
		return next_opendir(name);
	}
	long fd = tramp(SYS_openat, AT_FDCWD, (long)name, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

int fstatat(int dirfd, const char *name, struct stat *st, int flags) {
	return do_fstatat(dirfd, name, st, flags);
}
int fstatat64(int dirfd, const char *name, struct stat64 *st, int flags) {
	return do_fstatat(dirfd, name, (struct stat *)st, flags);
}

int stat(const char *name, struct stat *st) {
	return do_fstatat(AT_FDCWD, name, st, 0);
}
int stat64(const char *name, struct stat64 *st) {
	return do_fstatat(AT_FDCWD, name, (struct stat *)st, 0);
}

int lstat(const char *name, struct stat *st) {
	return do_fstatat(AT_FDCWD, name, st, AT_SYMLINK_NOFOLLOW);
}
int lstat64(const char *name, struct stat64 *st) {
	return do_fstatat(AT_FDCWD, name, (struct stat *)st, AT_SYMLINK_NOFOLLOW);
}

// __xstat and friends: what programs built against glibc before 2.33
// call (make). Version 0 and 1 are the kernel's struct stat on x86-64;
// any other is EINVAL, as glibc answers.
static int xstat(int ver, const char *name, struct stat *st, int flags) {
	if (ver != 0 && ver != 1) {
		errno = EINVAL;
		return -1;
	}
	return do_fstatat(AT_FDCWD, name, st, flags);
}
int __xstat(int ver, const char *name, struct stat *st) { return xstat(ver, name, st, 0); }
int __lxstat(int ver, const char *name, struct stat *st) {
	return xstat(ver, name, st, AT_SYMLINK_NOFOLLOW);
}
int __xstat64(int ver, const char *name, struct stat64 *st) {
	return xstat(ver, name, (struct stat *)st, 0);
}
int __lxstat64(int ver, const char *name, struct stat64 *st) {
	return xstat(ver, name, (struct stat *)st, AT_SYMLINK_NOFOLLOW);
}

int statx(int dirfd, const char *name, int flags, unsigned int mask, struct statx *stx) {
	return fast(dirfd, name, SYS_statx, dirfd, (long)name, flags, mask, (long)stx);
}

int access(const char *name, int mode) {
	return fast(AT_FDCWD, name, SYS_access, (long)name, mode, 0, 0, 0);
}

// euidaccess (eaccess): glibc's checks the file with fstatat from inside
// itself, and make asks it of every directory of PATH for every command
// it runs (a seventh of the traps of make -B). The kernel's faccessat2
// with AT_EACCESS answers the same question for a local name.
int euidaccess(const char *name, int mode) {
	if (tramp != NULL && local(name)) {
		long r = tramp(SYS_faccessat2, AT_FDCWD, (long)name, mode, AT_EACCESS, 0, 0);
		if (r != -ENOSYS) {
			if (r < 0) {
				errno = -r;
				return -1;
			}
			return 0;
		}
	}
	if (next_euidaccess == NULL) {
		errno = ENOSYS;
		return -1;
	}
	return next_euidaccess(name, mode);
}
int eaccess(const char *name, int mode) __attribute__((alias("euidaccess")));

ssize_t readlink(const char *name, char *buf, size_t size) {
	return fast(AT_FDCWD, name, SYS_readlink, (long)name, (long)buf, size, 0, 0);
}

ssize_t readlinkat(int dirfd, const char *name, char *buf, size_t size) {
	return fast(dirfd, name, SYS_readlinkat, dirfd, (long)name, (long)buf, size, 0);
}

ssize_t getxattr(const char *name, const char *attr, void *value, size_t size) {
	return fast(AT_FDCWD, name, SYS_getxattr, (long)name, (long)attr, (long)value, size, 0);
}

ssize_t lgetxattr(const char *name, const char *attr, void *value, size_t size) {
	return fast(AT_FDCWD, name, SYS_lgetxattr, (long)name, (long)attr, (long)value, size, 0);
}

ssize_t listxattr(const char *name, char *list, size_t size) {
	return fast(AT_FDCWD, name, SYS_listxattr, (long)name, (long)list, size, 0, 0);
}

ssize_t llistxattr(const char *name, char *list, size_t size) {
	return fast(AT_FDCWD, name, SYS_llistxattr, (long)name, (long)list, size, 0, 0);
}

// realpath: compilers canonicalise every directory they search with
// realpath(3), whose readlink of each component the C library makes
// from inside itself (make -B of a C project: 71 % of its traps). So
// realpath is glibc 2.36's algorithm (stdlib/canonicalize.c) here, with
// each readlink made through the trampoline while
// the name resolved so far is local. Anything else — a name or link
// reaching the namespace, a working directory in it, a name longer than
// the small buffers — is glibc's own realpath from the start, and traps
// as before: the readlinks have no effect to undo.

#define RP_BUF 1024       // glibc starts with buffers of this size and grows them
#define ELOOP_THRESHOLD 40 // glibc's __eloop_threshold on Linux

// suffix_requires_dir_check is glibc's: whether the rest of the name
// needs what came before to be a directory ("/", "/.", "/..").
static int suffix_requires_dir_check(const char *end) {
	while (*end == '/') {
		do
			end++;
		while (*end == '/');
		switch (*end++) {
		default:
			return 0;
		case 0:
			return 1;
		case '.':
			break;
		}
		if (!*end || (*end == '.' && (!end[1] || end[1] == '/')))
			return 1;
	}
	return 0;
}

// fast_realpath resolves name as glibc's realpath would and returns 1
// with its result in *out (errno set on failure), or returns 0 when
// glibc's realpath must do it.
static int fast_realpath(const char *name, char *resolved, char **out) {
	char rname[RP_BUF], extra[RP_BUF], link[RP_BUF];
	if (tramp == NULL || name == NULL || name[0] == 0)
		return 0;
	char *dest = rname;
	if (name[0] == '/')
		*dest++ = '/';
	else {
		// glibc starts from getcwd, which traps: the supervisor shows
		// a working directory in the namespace by its namespace name,
		// which local then refuses.
		if (getcwd(rname, RP_BUF) == NULL || rname[0] != '/')
			return 0;
		dest = rname + strlen(rname);
	}
	const char *start, *end;
	int nlinks = 0, failed = 1;
	for (start = name; *start; start = end) {
		while (*start == '/')
			start++;
		for (end = start; *end && *end != '/'; end++)
			;
		size_t len = end - start;
		if (len == 0)
			break;
		if (len == 1 && start[0] == '.')
			continue;
		if (len == 2 && start[0] == '.' && start[1] == '.') {
			if (dest > rname + 1)
				for (--dest; dest > rname && dest[-1] != '/'; --dest)
					;
			continue;
		}
		if (dest[-1] != '/')
			*dest++ = '/';
		if (dest + len + 1 >= rname + RP_BUF)
			return 0;
		memcpy(dest, start, len);
		dest += len;
		*dest = 0;
		if (!local(rname))
			return 0;
		long n = tramp(SYS_readlink, (long)rname, (long)link, RP_BUF - 1, 0, 0, 0);
		if (n >= RP_BUF - 1)
			return 0;
		if (n >= 0) {
			if (++nlinks > ELOOP_THRESHOLD) {
				errno = ELOOP;
				goto error;
			}
			link[n] = 0;
			size_t rest = strlen(end);
			if (n + rest >= RP_BUF)
				return 0;
			memmove(&extra[n], end, rest + 1);
			end = memcpy(extra, link, n);
			if (link[0] == '/')
				dest = rname + 1;
			else if (dest > rname + 1)
				for (--dest; dest > rname && dest[-1] != '/'; --dest)
					;
		} else if (n != -EINVAL) {
			errno = -n;
			goto error;
		} else {
			errno = EINVAL; // as glibc's readlink leaves it
			if (suffix_requires_dir_check(end)) {
				// glibc's dir_check: faccessat(name "/", F_OK, AT_EACCESS).
				if (dest + 2 > rname + RP_BUF)
					return 0;
				dest[0] = '/';
				dest[1] = 0;
				long r = tramp(SYS_faccessat2, AT_FDCWD, (long)rname, F_OK, AT_EACCESS, 0, 0);
				if (r == -ENOSYS)
					return 0;
				if (r < 0) {
					errno = -r;
					goto error;
				}
			}
		}
	}
	if (dest > rname + 1 && dest[-1] == '/')
		--dest;
	failed = 0;
error:
	*dest++ = 0;
	if (resolved != NULL) {
		// glibc copies what it has on failure too, when the name
		// does not exist or cannot be reached.
		if (!failed || errno == ENOENT || errno == EACCES)
			strcpy(resolved, rname);
		*out = failed ? NULL : resolved;
		return 1;
	}
	if (failed) {
		*out = NULL;
		return 1;
	}
	*out = malloc(dest - rname);
	if (*out != NULL)
		memcpy(*out, rname, dest - rname);
	return 1; // malloc set ENOMEM
}

char *realpath(const char *name, char *resolved) {
	char *out;
	if (fast_realpath(name, resolved, &out))
		return out;
	if (next_realpath == NULL) {
		errno = ENOSYS;
		return NULL;
	}
	return next_realpath(name, resolved);
}

char *canonicalize_file_name(const char *name) {
	return realpath(name, NULL);
}

// __realpath_chk is realpath under _FORTIFY_SOURCE (make); a buffer
// shorter than PATH_MAX is glibc's to report.
char *__realpath_chk(const char *name, char *resolved, size_t resolvedlen) {
	if (resolvedlen < PATH_MAX && next_realpath_chk != NULL)
		return next_realpath_chk(name, resolved, resolvedlen);
	return realpath(name, resolved);
}
