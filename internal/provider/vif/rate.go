package vif

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rates are bits per second, written and shown as tc(8) writes them:
// a number with one of the units below; a bare number is bits per
// second. "bit" units count bits, "bps" units count bytes (tc's
// confusing but established convention: 256kbps is 256 kilobytes/s).
var units = []struct {
	suffix string
	mult   float64
}{
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3},
	{"tibit", 1 << 40}, {"gibit", 1 << 30}, {"mibit", 1 << 20}, {"kibit", 1 << 10},
	{"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3},
	{"tibps", 8 << 40}, {"gibps", 8 << 30}, {"mibps", 8 << 20}, {"kibps", 8 << 10},
	{"bit", 1}, {"bps", 8},
}

// MaxRate is the largest rate a VIF takes (HTB's 64-bit byte rates
// allow more; no interface is faster).
const MaxRate = 1e12 * 8 // 8 tbit

// MinRate is the smallest: HTB needs a positive rate, and below one
// byte per second its arithmetic is meaningless.
const MinRate = 8

// ParseRate parses a tc rate such as "2mbit", "256kbps" or "1500000".
func ParseRate(s string) (uint64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, fmt.Errorf("empty rate")
	}
	num, mult := s, 1.0
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "+-_xXpPiInN") {
		// no signs, no hex floats, no inf/nan: "fast", "-1mbit" are not rates
		return 0, fmt.Errorf("%q is not a rate (a number with a unit as tc writes it: 2mbit, 256kbps, 1gbit)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a rate (a number with a unit as tc writes it: 2mbit, 256kbps, 1gbit)", s)
	}
	v := f * mult
	if v < MinRate {
		return 0, fmt.Errorf("%q is below the smallest rate, %s", s, FormatRate(MinRate))
	}
	if v > MaxRate {
		return 0, fmt.Errorf("%q is above the largest rate, %s", s, FormatRate(MaxRate))
	}
	return uint64(math.Round(v)), nil
}

// FormatRate shows r in the largest decimal bit unit that keeps it exact
// (so that it parses back to r), as tc shows rates.
func FormatRate(r uint64) string {
	for _, u := range []struct {
		s string
		m uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if r >= u.m && r%u.m == 0 {
			return strconv.FormatUint(r/u.m, 10) + u.s
		}
	}
	return strconv.FormatUint(r, 10) + "bit"
}
