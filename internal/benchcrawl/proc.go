package benchcrawl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var inf = math.Inf(1)

// maxLine bounds one output line kept by a lineWriter; longer lines are cut.
const maxLine = 64 << 10

// lineWriter splits what a child writes into lines and hands each to fn.
// It keeps at most maxLine bytes of an unfinished line and the last
// tailLines lines.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	fn   func(string)
	tail []string
}

const tailLines = 40

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLine - len(w.buf)
			if room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		room := maxLine - len(w.buf)
		w.buf = append(w.buf, p[:min(room, i)]...)
		w.line(string(bytes.TrimRight(w.buf, "\r")))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) line(s string) {
	if w.fn != nil {
		w.fn(s)
	}
	if len(w.tail) == tailLines {
		copy(w.tail, w.tail[1:])
		w.tail = w.tail[:tailLines-1]
	}
	w.tail = append(w.tail, s)
}

// flush hands an unfinished last line to fn.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = w.buf[:0]
	}
}

// lines returns the last lines seen.
func (w *lineWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.tail...)
}

// procSpec describes one measured child process.
type procSpec struct {
	name  string
	args  []string
	env   []string // nil = the harness's environment
	dir   string
	bound time.Duration
	// every is the sampling interval of the page counter.
	every time.Duration
	// stop is the signal sent to the process group at the time bound.
	stop syscall.Signal
	// onLine sees every stderr line and may update pages.
	onLine func(line string, pages *atomic.Int64)
}

// procResult is what a measured run gives.
type procResult struct {
	wall    time.Duration
	cpu     time.Duration // user+sys of the child and its waited-for descendants
	maxRSS  int64         // bytes
	series  []Sample
	pages   int64 // last value of the counter
	stopped bool  // interrupted at the time bound
	stdout  []string
	stderr  []string
	err     error
}

// graceAfterStop is how long a child may take to exit after the stop
// signal before it and its process group are killed.
const graceAfterStop = 30 * time.Second

// runMeasured runs spec in its own process group, samples the page counter
// every spec.every, interrupts it at spec.bound and reports its rusage.
func runMeasured(ctx context.Context, spec procSpec) procResult {
	var res procResult
	runCtx, cancel := context.WithTimeout(ctx, spec.bound)
	defer cancel()
	cmd := exec.CommandContext(runCtx, spec.name, spec.args...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, spec.stop)
	}
	cmd.WaitDelay = graceAfterStop
	var pages atomic.Int64
	errw := &lineWriter{fn: func(l string) {
		if spec.onLine != nil {
			spec.onLine(l, &pages)
		}
	}}
	outw := &lineWriter{}
	cmd.Stderr, cmd.Stdout = errw, outw

	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.err = fmt.Errorf("benchcrawl: start %s: %w", spec.name, err)
		return res
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	sampled := make(chan []Sample, 1)
	go func() {
		var s []Sample
		t := time.NewTicker(spec.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				sampled <- s
				return
			case now := <-t.C:
				if len(s) < maxSamples {
					s = append(s, Sample{T: now.Sub(start).Seconds(), Pages: pages.Load()})
				}
			}
		}
	}()
	werr := cmd.Wait()
	res.wall = time.Since(start)
	close(done)
	// Whatever the child left behind in its group goes now.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	errw.flush()
	outw.flush()
	res.series = <-sampled
	res.pages = pages.Load()
	res.series = append(res.series, Sample{T: res.wall.Seconds(), Pages: res.pages})
	res.stopped = runCtx.Err() != nil && ctx.Err() == nil
	res.stdout, res.stderr = outw.lines(), errw.lines()
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			res.maxRSS = ru.Maxrss * 1024 // KiB on Linux
		}
	}
	if werr != nil && !res.stopped {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ctx.Err() != nil {
			res.err = fmt.Errorf("benchcrawl: %s: %w", spec.name, werr)
		} else {
			res.err = fmt.Errorf("benchcrawl: %s: %w; last output: %s", spec.name, werr, strings.Join(lastN(res.stderr, 5), " | "))
		}
	}
	return res
}

// maxSamples bounds a series (a day at one sample a second).
const maxSamples = 86400

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// procCPU returns the user+sys CPU time a running process has used so far,
// from /proc/PID/stat (clock ticks of 1/100 s).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("benchcrawl: process CPU: %w", err)
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU extracts utime+stime from the text of /proc/PID/stat.
func parseProcStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("benchcrawl: /proc stat: no command field")
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(3) ppid(4) ... utime(14) stime(15).
	if len(f) < 13 {
		return 0, errors.New("benchcrawl: /proc stat: too few fields")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("benchcrawl: /proc stat: bad utime or stime")
	}
	return time.Duration(u+st) * (time.Second / 100), nil
}
