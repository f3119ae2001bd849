package testweb

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// maxHeldConns bounds the connections one raw server keeps open at once.
const maxHeldConns = 64

// rawRequest is the head of a request read by a raw server.
type rawRequest struct {
	method, target, host, userAgent string
}

// rawServer serves one hostile host over plain TCP, for responses net/http
// cannot produce. robots.txt is answered with a clean 404; every other
// request is passed to handle, which writes whatever it wants and returns
// the status it sent (0 if none).
type rawServer struct {
	w      *Web
	ln     net.Listener
	ip     netip.Addr
	handle func(c net.Conn, req *rawRequest, done <-chan struct{}) int
	done   chan struct{}

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	once  sync.Once
}

func (w *Web) startRaw(ln net.Listener, ip netip.Addr, handle func(net.Conn, *rawRequest, <-chan struct{}) int) {
	rs := &rawServer{w: w, ln: ln, ip: ip, handle: handle, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	w.mu.Lock()
	w.raws = append(w.raws, rs)
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					w.logf("testweb: raw accept on %v: %v", ip, err)
				}
				return
			}
			c := &stampConn{Conn: nc}
			rs.mu.Lock()
			full := len(rs.conns) >= maxHeldConns
			if !full {
				rs.conns[c] = struct{}{}
			}
			rs.mu.Unlock()
			if full {
				c.Close()
				continue
			}
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				defer func() {
					rs.mu.Lock()
					delete(rs.conns, c)
					rs.mu.Unlock()
					c.Close()
				}()
				rs.serveConn(c)
			}()
		}
	}()
}

// serveConn reads one request head and answers it.
func (rs *rawServer) serveConn(c *stampConn) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 4096)
	req, err := readRawHead(br)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	start := time.Now()
	var status int
	if strings.HasPrefix(req.target, "/robots.txt") {
		c.Write([]byte("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n"))
		status = 404
	} else {
		status = rs.handle(c, req, rs.done)
	}
	h := Hit{Host: hostOnly(req.host), IP: rs.ip, Path: req.target, Status: status,
		UserAgent: req.userAgent, Start: start}
	c.end(&h)
	rs.w.record(h)
}

// readRawHead reads a request line and headers, at most 64 KiB.
func readRawHead(br *bufio.Reader) (*rawRequest, error) {
	req := &rawRequest{}
	total := 0
	for i := 0; ; i++ {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		total += len(line)
		if total > 64<<10 {
			return nil, errors.New("testweb: request head too long")
		}
		s := strings.TrimRight(string(line), "\r\n")
		if i == 0 {
			f := strings.Fields(s)
			if len(f) != 3 {
				return nil, errors.New("testweb: bad request line")
			}
			req.method, req.target = f[0], f[1]
			continue
		}
		if s == "" {
			return req, nil
		}
		k, v, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "host":
			req.host = strings.TrimSpace(v)
		case "user-agent":
			req.userAgent = strings.TrimSpace(v)
		}
	}
}

// close stops accepting, drops every held connection and releases waiters.
func (rs *rawServer) close() {
	rs.once.Do(func() {
		close(rs.done)
		rs.ln.Close()
		rs.mu.Lock()
		for c := range rs.conns {
			c.Close()
		}
		rs.mu.Unlock()
	})
}

// hold waits until done or d has passed.
func hold(done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
