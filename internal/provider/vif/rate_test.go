package vif

import "testing"

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"2mbit", 2e6}, {"256kbps", 256e3 * 8}, {"1gbit", 1e9}, {"1500000", 1500000},
		{" 10Mbit\n", 10e6}, {"1.5mbit", 1.5e6}, {"1kibit", 1024}, {"8bit", 8}, {"1bps", 8},
		{"2.56mbps", 2.56e6 * 8},
	} {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "fast", "-1mbit", "mbit", "1xbit", "0", "1bit", "nan", "inf", "0x10mbit", "1e20gbit", "+5mbit", "1_000kbit"} {
		if got, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", bad, got)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for r, want := range map[uint64]string{2e6: "2mbit", 1500: "1500bit", 1e9: "1gbit", 2048e3: "2048kbit", 20480000: "20480kbit"} {
		if got := FormatRate(r); got != want {
			t.Errorf("FormatRate(%d) = %q, want %q", r, got, want)
		}
	}
}

// FuzzParseRate: no input panics, and every accepted rate is within
// bounds and survives FormatRate/ParseRate unchanged.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"2mbit", "256kbps", "1.5gbit", "fast", "-1", "1e3kbit", "8bit", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r < MinRate || r > MaxRate {
			t.Fatalf("ParseRate(%q) = %d, out of bounds", s, r)
		}
		back, err := ParseRate(FormatRate(r))
		if err != nil || back != r {
			t.Fatalf("ParseRate(FormatRate(%d)=%q) = %d, %v", r, FormatRate(r), back, err)
		}
	})
}
