package splice

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// rateUnits are tc's rate units (tc(8), "RATES"), lower case, and the
// spellings with "/s". Bits: bit (the default), kbit, mbit, gbit, tbit
// and the binary kibit, mibit, gibit, tibit; bytes: bps, kbps, mbps,
// gbps, tbps (as tc: kbps is kilobytes per second) and kibps, mibps,
// gibps, tibps; and B/s, kB/s or kb/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s,
// all bytes per second. The value is in bytes per second.
var rateUnits = map[string]float64{
	"": 1.0 / 8, "bit": 1.0 / 8, "bit/s": 1.0 / 8,
	"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "tbit": 1e12 / 8,
	"kibit": 1024.0 / 8, "mibit": (1 << 20) / 8.0, "gibit": (1 << 30) / 8.0, "tibit": (1 << 40) / 8.0,
	"kbit/s": 1e3 / 8, "mbit/s": 1e6 / 8, "gbit/s": 1e9 / 8,
	"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12,
	"kibps": 1 << 10, "mibps": 1 << 20, "gibps": 1 << 30, "tibps": 1 << 40,
	"b/s": 1, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
	"kib/s": 1 << 10, "mib/s": 1 << 20, "gib/s": 1 << 30, "tib/s": 1 << 40,
}

// ParseRate parses a rate as tc does ("10mbit", "500kbit", "1gbit",
// "100kbps", "2.5MiB/s"; case does not matter) and returns bytes per
// second. "0" means no limit.
func ParseRate(s string) (float64, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	if num == "" {
		return 0, fmt.Errorf("rate %q: no number", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		return 0, fmt.Errorf("rate %q: bad number", s)
	}
	f, ok := rateUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("rate %q: unknown unit %q (bit, kbit, mbit, gbit, bps, kbps, mbps, kb/s, MiB/s ...)", s, unit)
	}
	bps := v * f
	if math.IsInf(bps, 0) || bps > 1e15 {
		return 0, fmt.Errorf("rate %q: too large", s)
	}
	if v > 0 && bps < 1 {
		return 0, fmt.Errorf("rate %q: less than a byte per second", s)
	}
	return bps, nil
}

// FormatRate is a rate in tc's units, as ParseRate reads it back.
func FormatRate(bytesPerSec float64) string {
	bits := bytesPerSec * 8
	switch {
	case bits >= 1e9:
		return strconv.FormatFloat(bits/1e9, 'g', 6, 64) + "gbit"
	case bits >= 1e6:
		return strconv.FormatFloat(bits/1e6, 'g', 6, 64) + "mbit"
	case bits >= 1e3:
		return strconv.FormatFloat(bits/1e3, 'g', 6, 64) + "kbit"
	}
	return strconv.FormatFloat(bits, 'g', 6, 64) + "bit"
}

// splitNumber cuts "10.5mbit" into "10.5" and "mbit".
func splitNumber(s string) (string, string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// ParseSchedule parses the seed's schedule "N,d": N blocks, then a pause
// of d ("4,16ms", "1,70ms"). N is at least 1; d is a Go duration.
func ParseSchedule(s string) (int, time.Duration, error) {
	ns, ds, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("schedule %q: want N,d as in 4,16ms", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil || n < 1 || n > 1<<20 {
		return 0, 0, fmt.Errorf("schedule %q: N must be a number of blocks from 1", s)
	}
	d, err := time.ParseDuration(strings.TrimSpace(ds))
	if err != nil || d < 0 || d > time.Hour {
		return 0, 0, fmt.Errorf("schedule %q: d must be a duration such as 16ms", s)
	}
	return n, d, nil
}

// ParseSize parses a block size: bytes, or with k, m (KiB, MiB; also
// "64KiB", "1MiB", "4k").
func ParseSize(s string) (int, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	v, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("size %q: bad number", s)
	}
	var f uint64
	switch strings.ToLower(unit) {
	case "", "b":
		f = 1
	case "k", "kb", "kib":
		f = 1 << 10
	case "m", "mb", "mib":
		f = 1 << 20
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	if v == 0 || v*f > 1<<20 {
		return 0, fmt.Errorf("size %q: must be from 1 byte to 1 MiB", s)
	}
	return int(v * f), nil
}
