package crawllog

import (
	"bytes"
	"sync/atomic"
)

// Subscription receives the lines of crawl.log as they are written (not
// those written before it started), each with its newline. It is bounded:
// when its channel is full, lines are dropped and counted, so a slow
// reader never slows the crawl.
type Subscription struct {
	l       *Log
	c       chan string
	dropped atomic.Int64
}

// Subscribe starts a subscription holding up to buf lines (at least 1).
// After Close of the Log the channel is closed.
func (l *Log) Subscribe(buf int) *Subscription {
	s := &Subscription{l: l, c: make(chan string, max(buf, 1))}
	l.subMu.Lock()
	defer l.subMu.Unlock()
	select {
	case <-l.stop:
		close(s.c) // the Log is closing: nothing will come
	default:
		l.subs[s] = struct{}{}
	}
	return s
}

// Lines is the channel of lines; it is closed when the subscription or
// the Log ends.
func (s *Subscription) Lines() <-chan string { return s.c }

// Dropped returns the number of lines this subscription missed.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription. It is safe to call more than once and
// after the Log's Close.
func (s *Subscription) Close() {
	s.l.subMu.Lock()
	defer s.l.subMu.Unlock()
	if _, ok := s.l.subs[s]; ok {
		s.l.unsubscribe(s)
	}
}

// unsubscribe ends s; l.subMu is held.
func (l *Log) unsubscribe(s *Subscription) {
	delete(l.subs, s)
	l.goneDropped += s.dropped.Load()
	close(s.c)
}

// publish sends the lines of b to every subscription, dropping those that
// do not fit.
func (l *Log) publish(b []byte) {
	l.subMu.Lock()
	defer l.subMu.Unlock()
	if len(l.subs) == 0 {
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		line := string(b[:i+1])
		b = b[i+1:]
		for s := range l.subs {
			select {
			case s.c <- line:
			default:
				s.dropped.Add(1)
			}
		}
	}
}
