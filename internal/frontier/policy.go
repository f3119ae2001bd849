package frontier

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Assign is a queue-assignment policy: it decides which URLs share a visit
// state, i.e. a politeness queue (Heritrix's QueueAssignmentPolicy, in
// org.archive.crawler.frontier, with its Hostname, IP, Bucket and
// TopmostAssignedSurt policies). The key is a pure function of the URL,
// computed once when the URL leaves the ready queue for its visit state,
// and stays with it: a policy cannot be random or change its mind, so a
// URL is never queued under one key and looked for under another.
type Assign struct {
	kind    assignKind
	buckets uint64
}

type assignKind uint8

const (
	assignAuthority assignKind = iota
	assignHost
	assignDomain
	assignBucket
	assignURL
	assignIP
)

// ParseAssign reads a --assign value: authority (the default, as BUbiNG:
// scheme+authority), host (host name whatever the scheme and port), domain
// (registered domain by the Public Suffix List), bucket:N (a hash of the
// authority modulo N), url (every URL its own key; only the IP rule
// limits the rate) or ip (the resolved address: every host on one address
// shares a key).
func ParseAssign(s string) (Assign, error) {
	switch {
	case s == "" || s == "authority":
		return Assign{kind: assignAuthority}, nil
	case s == "host":
		return Assign{kind: assignHost}, nil
	case s == "domain":
		return Assign{kind: assignDomain}, nil
	case s == "url":
		return Assign{kind: assignURL}, nil
	case strings.HasPrefix(s, "bucket:"):
		n, err := strconv.ParseUint(s[len("bucket:"):], 10, 32)
		if err != nil || n == 0 {
			return Assign{}, fmt.Errorf("frontier: --assign %q: want bucket:N with N ≥ 1", s)
		}
		return Assign{kind: assignBucket, buckets: n}, nil
	case s == "ip":
		return Assign{kind: assignIP}, nil
	}
	return Assign{}, fmt.Errorf("frontier: unknown --assign policy %q (want authority, host, domain, ip, bucket:N or url)", s)
}

// String returns the policy as --assign spells it.
func (a Assign) String() string {
	switch a.kind {
	case assignHost:
		return "host"
	case assignDomain:
		return "domain"
	case assignBucket:
		return "bucket:" + strconv.FormatUint(a.buckets, 10)
	case assignURL:
		return "url"
	case assignIP:
		return "ip"
	}
	return "authority"
}

// key returns the politeness key of a URL whose scheme+authority is sa, and
// how many leading bytes of url all URLs of that key share (stored once in
// the visit state instead of in every queued record: prefix omission).
func (a Assign) key(sa, url []byte) (key string, prefixLen int) {
	switch a.kind {
	case assignHost:
		return "host:" + hostOf(string(sa)), 0
	case assignDomain:
		return "domain:" + urlx.RegisteredDomain(hostOf(string(sa))), 0
	case assignBucket:
		return "bucket:" + strconv.FormatUint(xxhash.Sum64(sa)%a.buckets, 10), 0
	case assignURL:
		return string(url), len(url)
	}
	return string(sa), len(sa)
}

// oneURLPerKey reports whether every key holds a single URL, so that a
// visit state can be forgotten as soon as it is empty.
func (a Assign) oneURLPerKey() bool { return a.kind == assignURL }
