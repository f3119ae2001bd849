package fetch

import (
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings are the fetcher's and the resolver's settings of a crawl,
// declared in Table. The agent turns them into Options and
// ResolverOptions.
type Settings struct {
	Timeout      time.Duration // whole request, body included
	MaxBody      int64         // longer bodies are truncated
	MaxIdleConns int           // idle keep-alive connections kept
	AllowPrivate bool          // the address guard lets private addresses through
	HostsFile    string        // hosts file consulted before DNS
	SystemDNS    bool          // names absent from the hosts file go to DNS
	DNSServer    string        // "IP:port" asked instead of resolv.conf's servers
	DNSTimeout   time.Duration // one resolution
	DNSRefresh   time.Duration // a host's name resolved again this long after (0: never)
	TLSVerify    string        // strict, record or off (ParseTLSVerify)
	CAFile       string        // PEM roots trusted besides the system's
	HTTP2        bool          // offer h2 by ALPN on https connections
}

// Table declares the fetcher's settings, bound to s.
func (s *Settings) Table() settings.Table {
	const transport = "the HTTP transport is built with it at the start"
	return settings.Table{
		settings.Bool(&s.AllowPrivate, "allow-private", false, "permit loopback, private and link-local destinations").
			In(settings.Seeds).SetFixed("the address guard is shared by the fetcher and the DNS stage").ClusterWide(),
		settings.String(&s.HostsFile, "hosts", "", "hosts file (IP name [name...]) consulted before DNS").
			WithUnit("FILE").In(settings.Fetching).SetFixed("read once at the start").
			Check(func() error {
				if s.HostsFile == "" {
					return nil
				}
				_, err := os.Stat(s.HostsFile)
				return err
			}),
		settings.Bool(&s.SystemDNS, "system-dns", true,
			"resolve names absent from the hosts file with the system resolver (Go's: resolv.conf, /etc/hosts), each answer cached for its DNS TTL, 10s to 1h (special-use names never are)").
			In(settings.Fetching).SetFixed("the resolver is built with it at the start"),
		settings.String(&s.DNSServer, "dns-server", "", "DNS server asked instead of the machine's resolv.conf servers").
			WithUnit("IP:PORT").In(settings.Fetching).SetFixed("the resolver is built with it at the start").
			Check(func() error {
				if s.DNSServer == "" {
					return nil
				}
				if _, err := netip.ParseAddrPort(s.DNSServer); err != nil {
					return fmt.Errorf("%q: want IP:port", s.DNSServer)
				}
				return nil
			}),
		settings.Duration(&s.DNSTimeout, "dns-timeout", 10*time.Second,
			"timeout of one name resolution (a timed-out name is retried, then its host purged)").
			In(settings.Fetching).Range(time.Millisecond, 5*time.Minute).SetFixed("the resolver is built with it at the start"),
		settings.Duration(&s.DNSRefresh, "dns-refresh", 0,
			"resolve a host's name again this long after its last resolution; a new address moves the host's keys there, their delays kept (0: a host keeps its first address)").
			In(settings.Fetching).Range(time.Duration(0), 30*24*time.Hour).SetFixed("the resolver is built with it at the start"),
		settings.Duration(&s.Timeout, "fetch-timeout", 30*time.Second, "timeout of a whole request").
			In(settings.Fetching).Range(time.Millisecond, time.Hour).SetLive(),
		settings.Size(&s.MaxBody, "max-body", 8<<20, "longer bodies are truncated (WARC-Truncated: length)").
			WithDoc("longer bodies are truncated and marked `WARC-Truncated: length`").
			In(settings.Limits).Range(int64(1024), int64(1<<40)).SetLive(),
		settings.Count(&s.MaxIdleConns, "max-idle-conns", 2048,
			"idle keep-alive connections kept, least recently used dropped first, HTTP/1.1 and (with --http2) as many HTTP/2 ones (lowered to fit the descriptor limit)").
			WithDoc("idle keep-alive connections kept, least recently used dropped first, HTTP/1.1 and (with `--http2`) as many HTTP/2 ones; open descriptors stay under `--fetchers` + this (twice this with `--http2`) + a few dozen (lowered, with a warning, so that `--fetchers` + this (twice) + 64, and the caps of the listeners it has (the console's 64 connections, the cluster exchange's 1,024, a coordinator's etcd member's 3,264 descriptors), fits the process's descriptor limit)").
			In(settings.Fetching).Range(1, 100000).SetFixed(transport),
		settings.String(&s.TLSVerify, "tls-verify", "record",
			"server certificates: record (connect anyway, record verified or the error), strict (refuse what does not verify) or off").
			WithUnit("MODE").In(settings.Fetching).SetFixed(transport).
			Check(func() error {
				_, err := ParseTLSVerify(s.TLSVerify)
				return err
			}),
		settings.Bool(&s.HTTP2, "http2", true,
			"offer HTTP/2 by ALPN on https connections and speak it to the hosts that choose it (one request at a time per host, as over HTTP/1.1; recorded in HTTP/1.1 form with WARC-Protocol: h2)").
			In(settings.Fetching).SetFixed(transport),
		settings.String(&s.CAFile, "ca-file", "", "PEM file of roots trusted besides the system's").
			WithUnit("FILE").In(settings.Fetching).SetFixed(transport).
			Check(func() error {
				_, err := LoadRoots(s.CAFile)
				return err
			}),
	}
}
