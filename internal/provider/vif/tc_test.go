package vif

import (
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// classMessage is an RTM_NEWTCLASS message as the kernel sends it: tcmsg,
// TCA_KIND, and TCA_STATS2 with the basic and queue counters.
func classMessage(bytes uint64, packets, backlog, drops uint32) []byte {
	native := nl.NativeEndian()
	basic := make([]byte, 16) // gnet_stats_basic, padded to 8
	native.PutUint64(basic, bytes)
	native.PutUint32(basic[8:], packets)
	queue := make([]byte, 20) // qlen, backlog, drops, requeues, overlimits
	native.PutUint32(queue[4:], backlog)
	native.PutUint32(queue[8:], drops)
	stats := nl.NewRtAttr(nl.TCA_STATS2, nil)
	stats.AddRtAttr(nl.TCA_STATS_BASIC, basic)
	stats.AddRtAttr(nl.TCA_STATS_QUEUE, queue)
	msg := (&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: 2, Handle: handle(5)}).Serialize()
	msg = append(msg, nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")).Serialize()...)
	return append(msg, stats.Serialize()...)
}

func TestParseClassStats(t *testing.T) {
	got, err := parseClassStats(classMessage(123456789012, 4242, 3000, 7))
	want := classStats{bytes: 123456789012, packets: 4242, drops: 7, backlog: 3000}
	if err != nil || got != want {
		t.Fatalf("parseClassStats = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range [][]byte{nil, make([]byte, nl.SizeofTcMsg-1)} {
		if _, err := parseClassStats(bad); err == nil {
			t.Errorf("parseClassStats(%d bytes) took a message shorter than tcmsg", len(bad))
		}
	}
}

// FuzzParseClassStats: no message panics, and whatever follows the
// counters of a well-formed one does not change them.
func FuzzParseClassStats(f *testing.F) {
	f.Add(classMessage(1500, 1, 0, 0), []byte{})
	f.Add(classMessage(0, 0, 0, 0), []byte{8, 0, 1, 0, 'h', 't', 'b', 0})
	f.Fuzz(func(t *testing.T, msg, tail []byte) {
		parseClassStats(msg)
		good := classMessage(99, 3, 2, 1)
		got, err := parseClassStats(append(good, tail...))
		if err == nil && got != (classStats{bytes: 99, packets: 3, drops: 1, backlog: 2}) {
			t.Fatalf("counters %+v after a tail of %x", got, tail)
		}
	})
}
