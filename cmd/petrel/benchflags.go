package main

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/pflag"
)

// benchWebFlags are the flags bench crawl and bench scale share: both run
// the petrel measured and a synthetic web as child processes, in a work
// directory. Each field points into the command's options; help names
// the command's defaults.
type benchWebFlags struct {
	petrel, work        *string
	keep                *bool
	hosts, pages, links *int
	port                *int
	webStart            *time.Duration
	firstIP             string // parsed by loopbackFirstIP
	help                benchWebHelp
}

// benchWebHelp are the defaults the shared flags' help states.
type benchWebHelp struct {
	hosts, pages, links, firstIP, port, webStart string
}

// bind declares the flags.
func (f *benchWebFlags) bind(fs *pflag.FlagSet) {
	h := f.help
	fs.StringVar(f.petrel, "petrel", "", "petrel binary to measure (default: this one)")
	fs.StringVar(f.work, "work", "", "work directory (default: a temporary one, removed afterwards unless --keep)")
	fs.BoolVar(f.keep, "keep", false, "keep the work directory")
	fs.IntVar(f.hosts, "web-hosts", 0, "hosts of the web (default "+h.hosts+")")
	fs.IntVar(f.pages, "web-pages", 0, "pages per host (default "+h.pages+")")
	fs.IntVar(f.links, "web-links", 0, "links per page (default "+h.links+")")
	fs.StringVar(&f.firstIP, "web-first-ip", "", "first loopback address of the web (default "+h.firstIP+")")
	fs.IntVar(f.port, "web-port", 0, "port of the web (default "+h.port+"; -1 = ephemeral)")
	fs.DurationVar(f.webStart, "web-start-timeout", 0, "give up when the web has not started within this (default "+h.webStart+")")
}

// loopbackFirstIP parses --web-first-ip: a loopback address (IPv4 when
// v4), or the zero Addr when unset (the command's default).
func (f *benchWebFlags) loopbackFirstIP(v4 bool) (netip.Addr, error) {
	if f.firstIP == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(f.firstIP)
	if err != nil || !a.IsLoopback() || (v4 && !a.Is4()) {
		return netip.Addr{}, flagError{fmt.Errorf("--web-first-ip %q: want a 127.x.y.z address", f.firstIP)}
	}
	return a, nil
}
