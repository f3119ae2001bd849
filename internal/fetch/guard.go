package fetch

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrForbiddenAddress is returned (wrapped) when the address guard refuses a
// destination.
var ErrForbiddenAddress = errors.New("forbidden address")

// A Guard decides which destination addresses may be connected to.
// The zero Guard refuses every non-public address.
type Guard struct {
	AllowPrivate bool // permit loopback, private, link-local and other non-public addresses
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	broadcast = netip.MustParseAddr("255.255.255.255")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
)

// Check returns nil if a may be dialled. Unless AllowPrivate is set it refuses
// the invalid address, loopback, private (RFC 1918, ULA fc00::/7), link-local,
// multicast, unspecified, "this network" 0/8, broadcast and CGNAT 100.64/10
// addresses, including IPv4-mapped and NAT64 (64:ff9b::/96) forms of those.
// The error wraps [ErrForbiddenAddress].
func (g Guard) Check(a netip.Addr) error {
	if !a.IsValid() {
		return fmt.Errorf("fetch: guard: invalid address: %w", ErrForbiddenAddress)
	}
	if g.AllowPrivate {
		return nil
	}
	if why := forbidden(a); why != "" {
		return fmt.Errorf("fetch: guard: %s is %s: %w", a, why, ErrForbiddenAddress)
	}
	return nil
}

func forbidden(a netip.Addr) string {
	u := a.Unmap()
	if u.Is6() && nat64.Contains(u) {
		b := u.As16()
		u = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	switch {
	case u.IsLoopback():
		return "loopback"
	case u.IsPrivate():
		return "private"
	case u.IsLinkLocalUnicast():
		return "link-local"
	case u.IsMulticast(), u.IsLinkLocalMulticast(), u.IsInterfaceLocalMulticast():
		return "multicast"
	case u.IsUnspecified():
		return "unspecified"
	case u.Is4() && cgnat.Contains(u):
		return "shared address space (CGNAT)"
	case u.Is4() && thisNet.Contains(u):
		return "\"this network\""
	case u == broadcast:
		return "broadcast"
	}
	return ""
}
