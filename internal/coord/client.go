package coord

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrWrongKey is returned when a coordinator does not accept this agent's
// certificate or presents one the crawl's authority did not issue: the
// agent holds another crawl key (or the endpoint is not this crawl's).
var ErrWrongKey = errors.New("the coordinators do not hold this crawl's key (a wrong --cluster-key-file, or another crawl's endpoints?)")

// Dial connects to the coordinators at endpoints. It first makes one TLS
// handshake with each endpoint in turn, so that a wrong key is told
// apart from coordinators not up yet: ErrWrongKey as soon as one answers
// with the wrong authority or refuses the certificate; a wait (until ctx
// ends) while none answers.
func Dial(ctx context.Context, endpoints []string, tc *tls.Config) (*clientv3.Client, error) {
	if err := probe(ctx, endpoints, tc); err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  tc,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
		Context:              ctx,
	})
}

// probe waits until one endpoint completes a handshake, and fails with
// ErrWrongKey at the first that refuses or is refused for its authority.
func probe(ctx context.Context, endpoints []string, tc *tls.Config) error {
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	var last error
	for {
		for _, ep := range endpoints {
			err := handshake(ctx, ep, tc)
			if err == nil {
				return nil
			}
			if errors.Is(err, ErrWrongKey) {
				return fmt.Errorf("coord: %s: %w", ep, err)
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("coord: no coordinator answered (%v): %w", last, context.Cause(ctx))
		case <-retry.C:
		}
	}
}

func handshake(ctx context.Context, endpoint string, tc *tls.Config) error {
	host := strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://")
	c := tc.Clone()
	if c.ServerName == "" {
		c.ServerName, _, _ = net.SplitHostPort(host)
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: c}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(hctx, "tcp", host)
	if err != nil {
		if wrongKey(err) {
			return ErrWrongKey
		}
		return err
	}
	// In TLS 1.3 the server checks the client's certificate after the
	// client's handshake ends: a refusal arrives as an alert on the
	// first read. A second of silence means accepted (etcd's server waits
	// for the client to speak first).
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = conn.Read(make([]byte, 1))
	conn.Close()
	if err != nil && wrongKey(err) {
		return ErrWrongKey
	}
	return nil
}

// wrongKey tells a handshake refused for its authority from one that
// failed for another reason.
func wrongKey(err error) bool {
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) {
		return true
	}
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ve) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "bad certificate") || strings.Contains(s, "unknown certificate authority") ||
		strings.Contains(s, "certificate required")
}
