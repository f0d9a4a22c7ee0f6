package catch

// The fast path's library (fastpath/fastpath.c) is built with the C
// compiler and committed, as the vif package commits its BPF objects:
// building wirefs needs no C compiler. Run `go generate` here after
// changing fastpath.c.
//go:generate cc -O2 -Wall -Wextra -fno-delete-null-pointer-checks -fPIC -shared -s -o fastpath/fastpath.so fastpath/fastpath.c
