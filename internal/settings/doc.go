// Package settings is the one table of a crawl's settings. Each setting is
// declared once, in the package it belongs to, and from the table come the
// command line's flags, the TOML configuration file, validation with
// one-line errors, `petrel config defaults`, the JSON form the console
// reads and changes, the README's flag table, and what may change while a
// crawl runs.
//
// # Declaring a setting
//
// A package that owns settings keeps their values in a plain struct (its
// Settings, or a field of one) and declares them in a Table method bound
// to that struct:
//
//	type Settings struct {
//		HostDelay time.Duration
//		// ...
//	}
//
//	func (s *Settings) Table() settings.Table {
//		return settings.Table{
//			settings.Duration(&s.HostDelay, "host-delay", 2*time.Second,
//				"minimum gap between ... to the same politeness key").
//				In(settings.Politeness).AtLeast(time.Duration(0)).SetLive().ClusterWide(),
//		}
//	}
//
// The constructor names the kind (Duration, Count, Size, Float, Bool,
// String, Enum, List, Text), the flag and TOML name, the default and a
// one-line help; the chained methods give the --help group (In), bounds
// (Range, AtLeast; a duration is at most MaxDuration unless Range says
// less, and --help and the README say its range) or a check of any other
// shape (Check), and say whether
// the setting is live (SetLive) or fixed for the run and why
// (SetFixed("read once at the start")), and whether every agent of a
// cluster must agree on it (ClusterWide). WithUnit names the value in
// --help (FILE, IP:PORT), WithDoc gives the README a longer text,
// ShowDefault and MachineDefault show a default that is not a plain value.
//
// The agent's Config holds each package's struct as a field and joins the
// tables (agent.Config.Table); a new package's table is added there. Then
// run `go test ./cmd/petrel -run README -update` to regenerate the
// README's flag table (the test fails while it is stale). A live setting
// must also take effect in Agent.Reconfigure: the test that changes every
// live setting mid-crawl lists them from the table and fails on one it does
// not observe.
//
// # Invariants
//
// A Table is bound to one struct: Set, SetValue, Reset and the loaders
// write that struct's fields, without synchronisation. To change settings
// of a running crawl, bind a table to a copy, apply and validate there,
// and hand the copy to the goroutine that owns the running values. Names
// are unique across the joined table (Join panics otherwise). Sizes read
// 1024, 64KiB, 8MiB, 1GiB (binary) and 500kB, 2MB (decimal) and are shown in
// the largest binary unit that divides them.
package settings
