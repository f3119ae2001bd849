// Package notify wakes the goroutines waiting for a change of state
// instead of their polling it: a Signal's Wait returns a channel that its
// next Notify closes. A waiter takes the channel before it looks at the
// state, so that no change between the look and the wait is missed.
package notify

import "sync"

// Signal wakes the goroutines waiting on it at its next Notify. The zero
// value is ready to use; it is safe for concurrent use. A Notify with no
// one waiting costs a lock.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns a channel closed at the next Notify.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify wakes every goroutine waiting on a channel Wait returned.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
