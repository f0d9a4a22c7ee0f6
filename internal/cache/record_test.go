package cache

import (
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// TestRanges checks the range set against a bitmap under random
// additions, truncations and queries.
func TestRanges(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const size = 200
	for round := range 200 {
		var r ranges
		var bits [size]bool
		for range 20 {
			a, b := int64(rng.Intn(size)), int64(rng.Intn(size))
			if rng.Intn(6) == 0 {
				r = r.cut(a)
				for i := a; i < size; i++ {
					bits[i] = false
				}
			} else {
				r = r.add(min(a, b), max(a, b))
				for i := min(a, b); i < max(a, b); i++ {
					bits[i] = true
				}
			}
			// Invariants: sorted, non-empty, not touching.
			for i, s := range r {
				if s.off >= s.end || (i > 0 && r[i-1].end >= s.off) {
					t.Fatalf("round %d: malformed %v", round, r)
				}
			}
			var n int64
			for i := range bits {
				if bits[i] {
					n++
				}
			}
			if r.bytes() != n {
				t.Fatalf("round %d: %v has %d bytes, bitmap %d", round, r, r.bytes(), n)
			}
			qa, qb := int64(rng.Intn(size)), int64(rng.Intn(size))
			qa, qb = min(qa, qb), max(qa, qb)
			g, missing := r.gap(qa, qb)
			want := int64(-1)
			for i := qa; i < qb; i++ {
				if !bits[i] {
					want = i
					break
				}
			}
			if missing != (want >= 0) || (missing && g.off != want) {
				t.Fatalf("round %d: gap(%d,%d) of %v = %v %v, first missing %d", round, qa, qb, r, g, missing, want)
			}
			if missing {
				for i := g.off; i < g.end; i++ {
					if bits[i] || i >= qb {
						t.Fatalf("round %d: gap %v of %v covers present byte %d", round, g, r, i)
					}
				}
				if g.end < qb && !bits[g.end] {
					t.Fatalf("round %d: gap %v of %v stops early", round, g, r)
				}
			}
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	good := record{Path: "/a/b", Mode: 0o644, Size: 10, Mtime: time.Unix(1700000000, 5).UTC(),
		ETag: `"x"`, Ranges: [][2]int64{{0, 4}, {6, 10}}, Boot: "b"}
	f.Add(good.encode())
	dirty := good
	dirty.Dirty, dirty.Ranges = true, [][2]int64{{0, 10}}
	f.Add(dirty.encode())
	f.Add([]byte(`{"path":"/x","ranges":[[5,3]]}`))
	f.Add([]byte(`{"path":"x/../y"}`))
	f.Add([]byte(`{"path":"/","size":-2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, rs, err := decodeRecord(b)
		if err != nil {
			return
		}
		// A record that decodes describes sane ranges and survives a
		// round trip unchanged.
		for i, s := range rs {
			if s.off < 0 || s.off >= s.end || (i > 0 && rs[i-1].end >= s.off) {
				t.Fatalf("accepted malformed ranges %v", rs)
			}
		}
		r2, rs2, err := decodeRecord(r.encode())
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(rs, rs2) || r.Path != r2.Path || r.Size != r2.Size || r.Dirty != r2.Dirty || !r.Mtime.Equal(r2.Mtime) {
			t.Fatalf("round trip changed %+v into %+v", r, r2)
		}
	})
}
