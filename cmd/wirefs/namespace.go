package main

import (
	"flag"
	"log/slog"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/provider/ctl"
	"wirefs/internal/provider/dns"
	"wirefs/internal/provider/netstream"
	"wirefs/internal/resolve"
)

// nsConfig holds the settings of the namespace, shared by every door
// (mount, run).
type nsConfig struct {
	connectTimeout time.Duration
	dnsTTL         time.Duration
}

func (c *nsConfig) addFlags(fl *flag.FlagSet) {
	fl.DurationVar(&c.connectTimeout, "connect-timeout", 30*time.Second, "bound on a TCP connect")
	fl.DurationVar(&c.dnsTTL, "dns-ttl", 60*time.Second, "how long resolved names are cached")
}

// daemonNamespace is the namespace and the caches a signal can drop.
type daemonNamespace struct {
	ns       *ns.Namespace
	resolver *resolve.Resolver
}

// buildNamespace mounts the providers at their implicit roots.
func buildNamespace(c nsConfig, log *slog.Logger) daemonNamespace {
	res := resolve.New(c.dnsTTL)
	streams := netstream.New(res, c.connectTimeout, log)
	n := ns.New()
	n.Mount("tcp", streams.TCP())
	n.Mount("udp", streams.UDP())
	n.Mount("dns", dns.Dir(res))
	n.Mount(".wirefs", ctl.Dir(streams.Live))
	return daemonNamespace{ns: n, resolver: res}
}

// dropCaches forgets every cached answer (SIGHUP).
func (d daemonNamespace) dropCaches() { d.resolver.Flush() }
