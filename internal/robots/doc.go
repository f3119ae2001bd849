// Package robots reads robots.txt files (RFC 9309) and keeps what a crawler
// needs of them, per host, at the scale of millions of hosts.
//
//   - [Parse] reads a file and reduces it to the groups that apply to one
//     product token: a [Robots], with the file's Sitemap lines.
//   - [Rules] is the compiled form of those rules: one flat string, its
//     format documented beside it, shared by every host whose rules are
//     equal (interned by content). It matches paths without decoding.
//   - [Store] keeps the rules (or the death) of authorities out of RAM in
//     one append-only file, its format documented beside it.
//
// # Invariants
//
// A Robots and a Rules are immutable and safe for concurrent use. The
// parser reads at most [MaxSize] bytes of a file. Two Rules are == exactly
// when they decide every path and give the Crawl-delay alike by
// construction: equal flat forms. Nothing in the package holds global
// mutable state (the intern table is package unique's, weak: a set no
// longer held is reclaimed).
//
// A Store's records are written without fsync, and need not be durable:
// a record lost in a crash is a robots.txt fetched again (no page of an
// authority is fetched while its rules are unknown), never a wrong
// answer, and OpenStore cuts the torn tail a crash leaves. What a restart
// relies on is synced: the header of a new store file, and a compacted
// file before it replaces the old one, so that a crash of the machine
// never leaves a file OpenStore refuses.
package robots
