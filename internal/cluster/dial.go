package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// DialCrawl connects a command (cluster status, stop, forget) to the
// crawl's etcd, embedded in coordinators or external at endpoints, with a
// client certificate issued from the crawl's key; close ends the
// connection. A wrong key is refused at once (coord.ErrWrongKey).
func DialCrawl(ctx context.Context, key Key, crawlName string, coordinators []coord.Coordinator, endpoints []string) (crawl *coord.Crawl, close func(), err error) {
	endpoints = etcdEndpoints(coordinators, endpoints)
	if len(endpoints) == 0 {
		return nil, nil, errors.New("give --coordinators or --etcd-endpoints")
	}
	auth, cert, err := key.issue("petrel-command", nil)
	if err != nil {
		return nil, nil, err
	}
	cli, err := coord.Dial(ctx, endpoints, auth.ClientTLS(cert))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	return coord.NewCrawl(cli, crawlName), func() { cli.Close() }, nil
}

// EtcdCerts writes, for an external etcd server of the crawl, the crawl's
// CA and a server certificate issued from key for ips, under dir (mode
// 0600): its --trusted-ca-file, --cert-file and --key-file (the same for
// its peers).
func EtcdCerts(key Key, name string, ips []netip.Addr, dir string) (coord.Files, error) {
	auth, cert, err := key.issue(name, ips)
	if err != nil {
		return coord.Files{}, err
	}
	return auth.WriteFiles(dir, name, cert)
}

// etcdEndpoints returns the client URLs of the crawl's etcd: its
// embedded members' when coordinators are named, else the external
// endpoints.
func etcdEndpoints(coordinators []coord.Coordinator, endpoints []string) []string {
	if len(coordinators) > 0 {
		return coord.Endpoints(coordinators)
	}
	return endpoints
}

// issue returns the crawl's authority and a certificate it issued for
// name and addrs.
func (k Key) issue(name string, addrs []netip.Addr) (*coord.Authority, tls.Certificate, error) {
	auth, err := k.Authority()
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	cert, err := auth.Issue(name, addrs)
	return auth, cert, err
}

// Authority is the crawl's certificate authority for its etcd, derived
// from the key.
func (k Key) Authority() (*coord.Authority, error) {
	return coord.NewAuthority(k.Derive("etcd-ca", 32))
}
