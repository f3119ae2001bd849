package coord

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Coordinator names one member of the crawl's etcd cluster: an agent
// that runs an embedded etcd member in its process. Client is the
// address clients dial; the member's peers reach it on Client's port + 1.
type Coordinator struct {
	Name   string
	Client netip.AddrPort
}

// AgentCoordinator is the coordinator of the agent name bound at bind, as
// Petrel places it: etcd's client port at bind's port + 2 (the exchange
// is on port + 1), its peer port at port + 3.
func AgentCoordinator(name string, bind netip.AddrPort) Coordinator {
	return Coordinator{Name: name, Client: netip.AddrPortFrom(bind.Addr(), bind.Port()+2)}
}

// String is the coordinator as --coordinators names it: NAME@IP:PORT.
func (c Coordinator) String() string { return c.Name + "@" + c.Client.String() }

// Peer is the address the member's peers dial.
func (c Coordinator) Peer() netip.AddrPort {
	return netip.AddrPortFrom(c.Client.Addr(), c.Client.Port()+1)
}

// ParseCoordinators parses --coordinators: NAME@IP:PORT, comma-separated,
// one, three or five of them, names and addresses distinct.
func ParseCoordinators(s string) ([]Coordinator, error) {
	var cs []Coordinator
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, addr, ok := strings.Cut(part, "@")
		if !ok || name == "" {
			return nil, fmt.Errorf("--coordinators: %q: want NAME@IP:PORT", part)
		}
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || ap.Port() == 0 || ap.Port() == 65535 {
			return nil, fmt.Errorf("--coordinators: %q: want NAME@IP:PORT with a port below 65535 (the member's peer port is PORT+1)", part)
		}
		if seen[name] || seen[ap.String()] {
			return nil, fmt.Errorf("--coordinators: %q named twice", part)
		}
		seen[name], seen[ap.String()] = true, true
		cs = append(cs, Coordinator{Name: name, Client: ap})
	}
	switch len(cs) {
	case 1, 3, 5:
		return cs, nil
	}
	return nil, fmt.Errorf("--coordinators: %d named; want 1, 3 or 5 (a majority of them must be up for the crawl to go on)", len(cs))
}

// Endpoints returns the client URLs of cs.
func Endpoints(cs []Coordinator) []string {
	var eps []string
	for _, c := range cs {
		eps = append(eps, "https://"+c.Client.String())
	}
	return eps
}

// MemberConfig is the configuration of an embedded etcd member.
type MemberConfig struct {
	Self         Coordinator   // this member (one of Coordinators)
	Coordinators []Coordinator // every member, identical on every agent
	Dir          string        // etcd's data directory
	TLS          Files         // the member's certificate, for clients and peers
	Token        string        // the initial cluster token: the crawl's name and key fingerprint
	Log          func(msg string)
	Logger       *slog.Logger // the connections its ports refuse past their caps (nil: not logged)
	// MaxClientConns and MaxPeerConns cap the connections open at once
	// on the client and the peer port (0: MaxClientConns, MaxPeerConns).
	MaxClientConns, MaxPeerConns int
}

// Member is an embedded etcd member, serving its client and peer
// addresses until Close. Each address is a front (front.go) capped at
// MaxClientConns or MaxPeerConns, forwarding to etcd on loopback.
type Member struct {
	etcd         *embed.Etcd
	client, peer *front
}

// ConnsRefused is the number of connections the client and the peer
// port closed at once for being past their caps.
func (m *Member) ConnsRefused() (client, peer int64) {
	return m.client.ln.Refused(), m.peer.ln.Refused()
}

// StartMember starts the member and waits until it serves requests, ctx
// ends, or it fails. A member whose peers are not up yet waits for them:
// etcd serves nothing before a majority has elected a leader.
func StartMember(ctx context.Context, mc MemberConfig) (*Member, error) {
	m, err := listenMember(mc)
	if err != nil {
		return nil, err
	}
	if err := m.start(ctx, mc); err != nil {
		m.client.close()
		m.peer.close()
		return nil, err
	}
	return m, nil
}

// listenMember binds the member's addresses, capped.
func listenMember(mc MemberConfig) (*Member, error) {
	client, err := listenFront(mc.Self.Client.String(), cmp.Or(mc.MaxClientConns, MaxClientConns), "coord: etcd client port", mc.Logger)
	if err != nil {
		return nil, fmt.Errorf("coord: etcd member %s: %w", mc.Self.Name, err)
	}
	peer, err := listenFront(mc.Self.Peer().String(), cmp.Or(mc.MaxPeerConns, MaxPeerConns), "coord: etcd peer port", mc.Logger)
	if err != nil {
		client.close()
		return nil, fmt.Errorf("coord: etcd member %s: %w", mc.Self.Name, err)
	}
	return &Member{client: client, peer: peer}, nil
}

// start starts etcd on loopback behind m's fronts and waits until it
// serves requests, ctx ends, or it fails.
func (m *Member) start(ctx context.Context, mc MemberConfig) error {
	cfg := embed.NewConfig()
	cfg.Name = mc.Self.Name
	cfg.Dir = mc.Dir
	// etcd listens on loopback ports of its choosing; it advertises the
	// fronts' addresses, which its peers and clients dial.
	cfg.ListenClientUrls = []url.URL{{Scheme: "https", Host: "127.0.0.1:0"}}
	cfg.ListenPeerUrls = []url.URL{{Scheme: "https", Host: "127.0.0.1:0"}}
	cfg.AdvertiseClientUrls = []url.URL{{Scheme: "https", Host: mc.Self.Client.String()}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "https", Host: mc.Self.Peer().String()}}
	cfg.ListenMetricsUrls = nil
	var ic []string
	for _, c := range mc.Coordinators {
		ic = append(ic, c.Name+"=https://"+c.Peer().String())
	}
	cfg.InitialCluster = strings.Join(ic, ",")
	cfg.InitialClusterToken = mc.Token
	cfg.ClusterState = embed.ClusterStateFlagNew
	tls := transport.TLSInfo{CertFile: mc.TLS.Cert, KeyFile: mc.TLS.Key, TrustedCAFile: mc.TLS.CA, ClientCertAuth: true}
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = tls, tls
	cfg.AutoCompactionMode = "revision"
	cfg.AutoCompactionRetention = "10000"
	cfg.QuotaBackendBytes = 512 << 20
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapTo(mc.Log))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("coord: etcd member %s: %w", mc.Self.Name, err)
	}
	m.client.serve(e.Clients[0].Addr())
	m.peer.serve(e.Peers[0].Addr())
	select {
	case <-e.Server.ReadyNotify():
		m.etcd = e
		return nil
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("coord: etcd member %s: %w", mc.Self.Name, err)
	case <-ctx.Done():
		// Without a quorum, a graceful stop waits on a leader that never
		// comes: stop the server at once, then its listeners.
		e.Server.HardStop()
		e.Close()
		return fmt.Errorf("coord: etcd member %s: no quorum formed: %w", mc.Self.Name, context.Cause(ctx))
	}
}

// Failed is closed (with the error available from Err) if the member
// stops serving on its own.
func (m *Member) Failed() <-chan error { return m.etcd.Err() }

// closeGrace bounds a member's graceful stop (a leadership transfer):
// past it, or at once without a leader, the server stops hard.
const closeGrace = 5 * time.Second

// Close stops the member: its peers see it gone.
func (m *Member) Close() {
	defer m.peer.close()
	defer m.client.close()
	if m.etcd.Server.Leader() == 0 {
		m.etcd.Server.HardStop()
	}
	done := make(chan struct{})
	go func() { m.etcd.Close(); close(done) }()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		m.etcd.Server.HardStop()
		<-done
	}
}

// zapTo is etcd's logger: errors, one line each, to log (nil:
// discarded). Its warnings are about choices made here on purpose (one
// port for gRPC and HTTP, the simple token) and are left out.
func zapTo(log func(string)) *zap.Logger {
	if log == nil {
		return zap.NewNop()
	}
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.LowercaseLevelEncoder})
	core := zapcore.NewCore(enc, zapcore.AddSync(lineWriter(log)), zapcore.ErrorLevel)
	return zap.New(zapcore.NewSamplerWithOptions(core, time.Second, 10, 0))
}

type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	w(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
