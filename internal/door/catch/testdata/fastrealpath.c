// The fast path's realpath (fastpath/fastpath.c) beside glibc's, for
// TestFastPathRealpath: reads names, one a line, and prints for each
// "glibc" when the fast path leaves the name to glibc's realpath, else
// "same" when both give the same result, buffer and errno (with a
// caller's buffer and with none), or what differs.
#include "../fastpath/fastpath.c"
#include <stdio.h>

int main(void) {
	char line[8192];
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\n")] = 0;
		char want[PATH_MAX], got[PATH_MAX];
		memset(want, 'x', sizeof want);
		memset(got, 'x', sizeof got);
		errno = 0;
		char *w = next_realpath(line, want);
		int we = errno;
		char *out;
		errno = 0;
		if (!fast_realpath(line, got, &out)) {
			printf("glibc\n");
			continue;
		}
		int ge = errno;
		if ((w == NULL) != (out == NULL) || we != ge || memcmp(want, got, sizeof want) != 0) {
			printf("differ: glibc %s %d %.100s, fast %s %d %.100s\n", w ? "ok" : "NULL", we, want,
				out ? "ok" : "NULL", ge, got);
			continue;
		}
		char *wm = next_realpath(line, NULL), *gm;
		if (!fast_realpath(line, NULL, &gm) || (wm == NULL) != (gm == NULL) || (wm && strcmp(wm, gm) != 0)) {
			printf("differ without a buffer: %s %s\n", wm ? wm : "NULL", gm ? gm : "NULL");
			continue;
		}
		free(wm);
		free(gm);
		printf("same\n");
	}
	return 0;
}
