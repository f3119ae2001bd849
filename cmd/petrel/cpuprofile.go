package main

import (
	"context"
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

// cpuProfile is the --cpuprofile of a process: started at once or after a
// delay, and written out at the process's first orderly stop — its end,
// or the first SIGINT or SIGTERM (ctx's end: a harness may kill a process
// it has asked to stop before it returns, as an agent's leave can outlast
// the harness's grace). A profile stopped before its delay has passed is
// written empty of samples, still a valid profile. A process killed with
// SIGKILL writes nothing: its file stays empty (the profile is built in RAM
// and written when it stops).
type cpuProfile struct {
	mu               sync.Mutex
	f                *os.File
	started, stopped bool
}

// startCPUProfile creates path and starts its profile after delay (at once
// when delay ≤ 0); the profile stops when ctx ends or at stop.
func startCPUProfile(ctx context.Context, path string, delay time.Duration) (*cpuProfile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	p := &cpuProfile{f: f}
	if delay <= 0 {
		if err := p.start(); err != nil {
			f.Close()
			return nil, err
		}
	}
	go func() {
		t := time.NewTimer(max(delay, 0))
		defer t.Stop()
		if delay > 0 {
			select {
			case <-t.C:
				p.start()
			case <-ctx.Done():
			}
		}
		<-ctx.Done()
		p.stop()
	}()
	return p, nil
}

func (p *cpuProfile) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.stopped {
		return nil
	}
	p.started = true
	return pprof.StartCPUProfile(p.f)
}

// stop writes the profile out (once; later calls do nothing).
func (p *cpuProfile) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	if !p.started {
		if pprof.StartCPUProfile(p.f) != nil {
			p.f.Close()
			return
		}
	}
	pprof.StopCPUProfile()
	p.f.Close()
}
