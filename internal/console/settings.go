package console

import (
	"fmt"
	"net/netip"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings are the console's settings of a crawl, declared in Table.
type Settings struct {
	Addr      string // IP:PORT of the console's server ("": none)
	TokenFile string // "": DIR/state/console.token
}

// Table declares the console's settings, bound to s.
func (s *Settings) Table() settings.Table {
	const bound = "the server is bound at the start"
	return settings.Table{
		settings.String(&s.Addr, "console-addr", "",
			"serve the web console, the JSON API and /metrics on this IP:PORT (off by default; binds exactly this address)").
			WithUnit("IP:PORT").
			WithDoc("serve the web console, the JSON API (`docs/api.md`) and `/metrics` on this IP:PORT; off by default; binds exactly this address, and off loopback every call needs the token").
			In(settings.Operations).SetFixed(bound).
			Check(func() error {
				if s.Addr == "" {
					return nil
				}
				if _, err := netip.ParseAddrPort(s.Addr); err != nil {
					return fmt.Errorf("%q: want IP:PORT (e.g. 127.0.0.1:8080)", s.Addr)
				}
				return nil
			}),
		settings.String(&s.TokenFile, "console-token-file", "",
			"file holding the console's bearer token, created with a random token (mode 0600) when missing (default DIR/state/console.token)").
			WithUnit("FILE").In(settings.Operations).SetFixed(bound),
	}
}
