package coord

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/petrel-crawler/petrel/internal/netcap"
)

// The caps of an embedded member's ports (netcap: past a cap a new
// connection is closed at once, counted and logged). Each connection
// within them costs the agent three descriptors: the one accepted and
// the two ends of its forwarding to etcd on loopback (front).
const (
	// MaxClientConns bounds the client port: each agent's client keeps
	// one connection to each coordinator, as the exchange keeps one to
	// each agent (cluster.MaxExchangeConns), and a command opens one.
	MaxClientConns = 1024
	// MaxPeerConns bounds the peer port: etcd's raft transport opens at
	// most about eight connections to each other member (two streams,
	// four pipeline, a snapshot, a probe), and a crawl has at most five
	// coordinators.
	MaxPeerConns = 64
	// MemberDescriptors is the most descriptors a member's connections
	// take at once: three for each within the caps.
	MemberDescriptors = 3 * (MaxClientConns + MaxPeerConns)
)

// frontDialTimeout bounds the dial from a front to etcd's loopback
// listener.
const frontDialTimeout = 5 * time.Second

// front serves one of a member's addresses in etcd's place: etcd offers
// no way to cap the connections of the listeners it makes itself, so it
// listens on loopback and the front, capped, forwards each connection it
// accepts there, bytes unchanged (TLS is between the dialer and etcd).
// etcd's loopback ports are reachable from this host only, under the
// same mutual TLS, and are not capped but by etcd's own bound on its
// client listener (the descriptor limit less 150, past which it waits).
// Build one with listenFront; it forwards once serve is called and
// until close.
type front struct {
	ln *netcap.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // both ends of each forwarding
	closed bool
}

// listenFront binds addr for a front of at most n connections, its
// refusals logged to log as name's.
func listenFront(addr string, n int, name string, log *slog.Logger) (*front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &front{ln: netcap.Limit(ln, n, name, log), conns: map[net.Conn]struct{}{}}, nil
}

// serve forwards the connections accepted, from now until close, to to.
func (f *front) serve(to net.Addr) {
	f.wg.Go(func() {
		for {
			c, err := f.ln.Accept()
			if err != nil {
				return // closed
			}
			f.wg.Go(func() { f.forward(c, to) })
		}
	})
}

// forward copies between c and a new connection to to until either
// side ends, then closes both.
func (f *front) forward(c net.Conn, to net.Addr) {
	defer c.Close()
	if !f.track(c) {
		return
	}
	defer f.untrack(c)
	up, err := net.DialTimeout("tcp", to.String(), frontDialTimeout)
	if err != nil {
		return
	}
	defer up.Close()
	if !f.track(up) {
		return
	}
	defer f.untrack(up)
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// track records c to be closed by close; it reports false (c is not
// recorded) once the front is closed.
func (f *front) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *front) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// close stops accepting, closes every connection being forwarded, and
// waits for the forwardings to end.
func (f *front) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
