package notify

import "testing"

// TestSignal: a channel taken before a Notify is closed by it; one taken
// after waits for the next.
func TestSignal(t *testing.T) {
	var s Signal
	s.Notify() // no one waits: nothing to close
	before := s.Wait()
	if s.Wait() != before {
		t.Fatal("two waits before a notify got different channels")
	}
	s.Notify()
	select {
	case <-before:
	default:
		t.Fatal("a channel taken before Notify is still open")
	}
	after := s.Wait()
	select {
	case <-after:
		t.Fatal("a channel taken after Notify is already closed")
	default:
	}
	s.Notify()
	<-after
}
