// The fast path's test of names (fastpath/fastpath.c's local), for
// TestFastPathAgrees: reads names, one a line, and prints for each "1"
// if the library would let it through untrapped, "0" if it traps.
#include "../fastpath/fastpath.c"
#include <stdio.h>

int main(void) {
	char line[8192];
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\n")] = 0;
		printf("%d\n", local(line));
	}
	return 0;
}
