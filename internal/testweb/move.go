package testweb

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// Moving a host, as a site migrates to another server: MoveHost makes a
// normal host answer on another of the web's addresses as well, and the
// web's name server (Web.ListenDNS) answer that address for it from then
// on. The old address keeps serving the host (the old server stays up
// while resolvers' caches expire); the hit log's IP says which address
// each request reached. Moving needs a fixed Config.Port: a URL names its
// port, so the new address must listen on the old one's.

// placement is where the moved hosts are served besides their own address.
type placement struct {
	mu    sync.RWMutex
	moved map[string]netip.Addr // host name → its address now
}

// MoveHost makes host name (a normal host of the web) answer on to, one of
// the web's addresses, and the web's name server give to for it.
func (w *Web) MoveHost(name string, to netip.Addr) error {
	name = strings.ToLower(name)
	s := w.byName[name]
	if s == nil || slices.Contains(w.hsites, s) {
		return fmt.Errorf("testweb: move %s: not a normal host of this web", name)
	}
	if !slices.Contains(w.addrs, to) {
		return fmt.Errorf("testweb: move %s: %s is not an address of this web", name, to)
	}
	if w.cfg.Port == 0 {
		return fmt.Errorf("testweb: move %s: the web needs a fixed port (Config.Port) to move a host", name)
	}
	w.place.mu.Lock()
	defer w.place.mu.Unlock()
	if w.place.moved == nil {
		w.place.moved = map[string]netip.Addr{}
	}
	w.place.moved[name] = to
	return nil
}

// AddrOf returns the address host name has now (its own, or the one it
// was moved to).
func (w *Web) AddrOf(name string) (netip.Addr, error) {
	name = strings.ToLower(name)
	w.place.mu.RLock()
	a, ok := w.place.moved[name]
	w.place.mu.RUnlock()
	if ok {
		return a, nil
	}
	if s := w.byName[name]; s != nil {
		return s.ip, nil
	}
	return netip.Addr{}, fmt.Errorf("testweb: %s: not a host of this web", name)
}

// siteAt returns the site named name that address ip serves (nil if
// none): one of its own group, or one moved to it.
func (w *Web) siteAt(ip netip.Addr, name string, group map[string]*site) *site {
	if s := group[name]; s != nil {
		return s
	}
	w.place.mu.RLock()
	a, ok := w.place.moved[name]
	w.place.mu.RUnlock()
	if ok && a == ip {
		return w.byName[name]
	}
	return nil
}

// ListenDNS starts a name server for the web on addr ("IP:port", a
// loopback IP; port 0 picks one), answering each host's current address
// (AddrOf) with a TTL of one second.
func (w *Web) ListenDNS(addr string) (*DNSServer, error) {
	return listenDNS(addr, w.AddrOf, 1)
}
