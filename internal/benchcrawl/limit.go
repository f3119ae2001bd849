package benchcrawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// decoy is a UDP socket standing in for a name server.
type decoy struct{ c net.PacketConn }

// listenDecoy listens on decoyDNS port 53.
func listenDecoy() (*decoy, error) {
	c, err := net.ListenPacket("udp4", net.JoinHostPort(decoyDNS, "53"))
	if err != nil {
		return nil, fmt.Errorf("decoy name server: %w", err)
	}
	return &decoy{c: c}, nil
}

// packets returns how many packets arrive within wait (and were queued).
func (d *decoy) packets(wait time.Duration) int {
	buf := make([]byte, 1500)
	n := 0
	deadline := time.Now().Add(wait)
	for {
		_ = d.c.SetReadDeadline(deadline)
		if _, _, err := d.c.ReadFrom(buf); err != nil {
			return n
		}
		n++
	}
}

// Close closes the socket.
func (d *decoy) Close() error { return d.c.Close() }

// limitScript renders the wrk Lua script that cycles through every page of
// the given hosts (Host headers, with port) and paths: request i asks host
// i mod len(hosts) for path (i div len(hosts)) mod len(paths), so
// consecutive requests spread over the hosts as a crawler's do.
func limitScript(hosts, paths []string) string {
	var b strings.Builder
	b.WriteString("local hosts = {")
	for i, h := range hosts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(h))
	}
	b.WriteString("}\nlocal paths = {")
	for i, p := range paths {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(p))
	}
	b.WriteString(`}
local i = 0
request = function()
  local h = hosts[(i % #hosts) + 1]
  local p = paths[(math.floor(i / #hosts) % #paths) + 1]
  i = i + 1
  return wrk.format("GET", p, {["Host"] = h, ["User-Agent"] = "petrel-benchcrawl-wrk"})
end
`)
	return b.String()
}

// pickSpread returns up to n elements of s, evenly spaced.
func pickSpread(s []string, n int) []string {
	if n >= len(s) {
		return append([]string(nil), s...)
	}
	out := make([]string, 0, n)
	for k := 0; k < n; k++ {
		out = append(out, s[k*len(s)/n])
	}
	return out
}

// measureLimit runs o.LimitAddrs wrk processes at once, each against one
// address of the web (spread over the address range) with one thread and
// o.LimitConns keep-alive connections, cycling through every page of every
// host on that address; the limit is the sum of their rates.
func measureLimit(ctx context.Context, o Options, web *webProc, dir string) (*Limit, error) {
	wrk := o.Wrk
	if wrk == "" {
		p, err := exec.LookPath("wrk")
		if err != nil {
			return nil, errors.New("wrk not installed (apt-get install -y wrk)")
		}
		wrk = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("benchcrawl: limit: %w", err)
	}
	ports := portsByAddr(web.hosts, web.seeds)
	var cands []string
	for _, a := range web.hosts.addrs {
		if _, ok := ports[a]; ok {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		return nil, errors.New("no address with a known port")
	}
	addrs := pickSpread(cands, o.LimitAddrs)
	paths := []string{"/"}
	for k := 1; k < o.PagesPerHost; k++ {
		paths = append(paths, "/p/"+strconv.Itoa(k)+".html")
	}
	lim := &Limit{DurationS: o.LimitDuration.Seconds(), Connections: o.LimitConns,
		How: fmt.Sprintf("%d wrk processes at once, one per address (%s), each 1 thread and %d keep-alive connections for %s, cycling through the %d pages of each host on its address via the Host header; limit = sum of Requests/sec; wrk shares the CPUs with the web",
			len(addrs), strings.Join(addrs, ", "), o.LimitConns, o.LimitDuration, len(paths))}
	type out struct {
		rate   float64
		non2xx int64
		err    error
		addr   string
	}
	results := make([]out, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		var hosts []string
		for _, n := range web.hosts.names[a] {
			h := n
			if ports[a] != "80" {
				h += ":" + ports[a]
			}
			hosts = append(hosts, h)
		}
		script := filepath.Join(dir, "cycle-"+strconv.Itoa(i)+".lua")
		if err := os.WriteFile(script, []byte(limitScript(hosts, paths)), 0o644); err != nil {
			return nil, fmt.Errorf("benchcrawl: limit: %w", err)
		}
		args := []string{"-t1", "-c" + strconv.Itoa(o.LimitConns), "-d" + strconv.Itoa(int(o.LimitDuration.Seconds())) + "s",
			"-s", script, "http://" + net.JoinHostPort(a, ports[a]) + "/"}
		lim.Commands = append(lim.Commands, wrk+" "+strings.Join(args, " "))
		wg.Add(1)
		go func(i int, a string, args []string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, o.LimitDuration+30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(cctx, wrk, args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			b, err := cmd.CombinedOutput()
			if err != nil {
				results[i] = out{err: fmt.Errorf("wrk %s: %w: %s", a, err, strings.TrimSpace(string(b))), addr: a}
				return
			}
			r, n, err := wrkRate(string(b))
			results[i] = out{rate: r, non2xx: n, err: err, addr: a}
		}(i, a, args)
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		lim.PagesPerSec += r.rate
		lim.Non2xx += r.non2xx
		lim.PerAddress = append(lim.PerAddress, fmt.Sprintf("%s: %.0f/s", r.addr, r.rate))
	}
	return lim, nil
}
