package testweb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSServer is the authoritative name server of a web (a generated one,
// or a Web: Web.ListenDNS), over UDP on a loopback address: an A question
// for a host of the web gets its address (TTL one hour; one second for a
// Web, whose hosts may move), any other type for it an empty NOERROR
// answer, a name the web does not have NXDOMAIN, and a malformed or
// multi-question message FORMERR (or nothing when not even its header
// parses). It answers with the question's ID and keeps no state per query.
type DNSServer struct {
	pc      net.PacketConn
	lookup  func(name string) (netip.Addr, error)
	ttl     uint32 // of every answer, in seconds
	queries atomic.Int64
	wg      sync.WaitGroup
	once    sync.Once
}

// dnsTTL is the TTL of every answer, in seconds.
const dnsTTL = 3600

// ListenDNS starts the DNS server of g on addr ("IP:port", a loopback IP;
// port 0 picks one).
func ListenDNS(addr string, g *Gen) (*DNSServer, error) {
	return listenDNS(addr, g.Lookup, dnsTTL)
}

// listenDNS starts a DNS server on addr answering lookup's address with
// ttl.
func listenDNS(addr string, lookup func(string) (netip.Addr, error), ttl uint32) (*DNSServer, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("testweb: DNS server address %q: want a loopback IP:port", addr)
	}
	pc, err := net.ListenPacket("udp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("testweb: DNS server: %w", err)
	}
	s := &DNSServer{pc: pc, lookup: lookup, ttl: ttl}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *DNSServer) Addr() string { return s.pc.LocalAddr().String() }

// Queries returns how many questions were answered.
func (s *DNSServer) Queries() int64 { return s.queries.Load() }

// Close stops the server and waits for it.
func (s *DNSServer) Close() error {
	var err error
	s.once.Do(func() {
		err = s.pc.Close()
		s.wg.Wait()
	})
	return err
}

func (s *DNSServer) loop() {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	out := make([]byte, 0, 512)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		resp, ok := s.answer(buf[:n], out[:0])
		if !ok {
			continue
		}
		s.queries.Add(1)
		_, _ = s.pc.WriteTo(resp, from)
	}
}

// answer builds the response to the query msg into out; ok is false when
// the message cannot be answered at all.
func (s *DNSServer) answer(msg, out []byte) (resp []byte, ok bool) {
	var p dnsmessage.Parser
	hdr, err := p.Start(msg)
	if err != nil || hdr.Response {
		return nil, false
	}
	rh := dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, OpCode: hdr.OpCode,
		RecursionDesired: hdr.RecursionDesired}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 || hdr.OpCode != 0 {
		rh.RCode = dnsmessage.RCodeFormatError
		if hdr.OpCode != 0 {
			rh.RCode = dnsmessage.RCodeNotImplemented
		}
		b := dnsmessage.NewBuilder(out, rh)
		resp, err = b.Finish()
		return resp, err == nil
	}
	q := qs[0]
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	addr, lerr := s.lookup(name)
	if lerr != nil {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(out, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil {
		return nil, false
	}
	if lerr == nil && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		if b.StartAnswers() != nil {
			return nil, false
		}
		rr := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: s.ttl}
		if b.AResource(rr, dnsmessage.AResource{A: addr.As4()}) != nil {
			return nil, false
		}
	}
	resp, err = b.Finish()
	return resp, err == nil
}
