package sieve

import (
	"fmt"
	"sync"
)

// memoryPendingKeys bounds the keys a Memory sieve buffers before it flushes
// by itself.
const memoryPendingKeys = 1 << 16

// Memory is a sieve held entirely in RAM: a set of the hashes seen and a
// bounded buffer of pending keys. It has the contract of Sieve and the same
// receiver protocol as DRUM, but nothing survives Close; it is meant for tests
// and tiny crawls. The receiver is called from the goroutine that calls Flush,
// Close, or the Enqueue that fills the buffer, with the sieve's lock held, so
// flows never overlap and the receiver must not call back into the sieve.
type Memory struct {
	keyPrefix int // leading key bytes not hashed
	mu        sync.Mutex
	recv      NewFlowReceiver
	seen      map[uint64]struct{}
	arena     []byte // pending keys, concatenated
	ends      []int  // end offset of each pending key in arena
	added     []uint64
	closed    bool
	st        Stats
}

var _ Sieve = (*Memory)(nil)

// NewMemory returns an empty in-memory sieve delivering to recv.
func NewMemory(recv NewFlowReceiver) *Memory {
	return &Memory{recv: recv, seen: make(map[uint64]struct{})}
}

// NewMemoryPrefix is NewMemory for keys whose first keyPrefix bytes are not
// part of their identity (see Options.KeyPrefix).
func NewMemoryPrefix(recv NewFlowReceiver, keyPrefix int) *Memory {
	m := NewMemory(recv)
	m.keyPrefix = keyPrefix
	return m
}

// Enqueue adds a copy of key. When the pending buffer reaches its bound, the
// call flushes (calling the receiver) and returns flushed true.
func (m *Memory) Enqueue(key []byte) (flushed bool, err error) {
	if len(key) > MaxKeyLen {
		return false, fmt.Errorf("sieve: enqueue: key of %d bytes exceeds %d", len(key), MaxKeyLen)
	}
	if len(key) < m.keyPrefix {
		return false, fmt.Errorf("sieve: enqueue: key of %d bytes is shorter than its %d-byte prefix", len(key), m.keyPrefix)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, ErrClosed
	}
	m.arena = append(m.arena, key...)
	m.ends = append(m.ends, len(m.arena))
	m.st.Enqueued++
	if len(m.ends) < memoryPendingKeys {
		return false, nil
	}
	return true, m.flushLocked()
}

// Flush delivers the pending keys that are new, in first-enqueue order, as
// one flow (no flow if none is new). If the receiver fails, the set of seen
// hashes is left as it was and the pending keys stay pending, so a later
// Flush delivers them again.
func (m *Memory) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return m.flushLocked()
}

func (m *Memory) flushLocked() error {
	if len(m.ends) == 0 {
		return nil
	}
	m.added = m.added[:0]
	err := m.deliverLocked()
	if err != nil {
		for _, h := range m.added {
			delete(m.seen, h)
		}
		return fmt.Errorf("sieve: flush: receiver: %w", err)
	}
	m.st.Flushes++
	m.st.New += uint64(len(m.added))
	m.st.Duplicates += uint64(len(m.ends) - len(m.added))
	m.arena, m.ends = m.arena[:0], m.ends[:0]
	return nil
}

func (m *Memory) deliverLocked() error {
	started := false
	start := 0
	for _, end := range m.ends {
		key := m.arena[start:end:end]
		start = end
		h := hasher{prefix: m.keyPrefix}.hash(key)
		if _, ok := m.seen[h]; ok {
			continue
		}
		m.seen[h] = struct{}{}
		m.added = append(m.added, h)
		if !started {
			if err := m.recv.PrepareToAppend(); err != nil {
				return err
			}
			started = true
		}
		if err := m.recv.Append(h, key); err != nil {
			return err
		}
	}
	if started {
		return m.recv.FinishedAppending()
	}
	return nil
}

// Close flushes what is pending and calls NoMoreAppend. It is idempotent.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	err := m.flushLocked()
	m.closed = true
	if rerr := m.recv.NoMoreAppend(); rerr != nil && err == nil {
		err = fmt.Errorf("sieve: close: receiver: %w", rerr)
	}
	return err
}

// Stats returns a snapshot of the sieve's counters; StoredKeys is the size of
// the seen set and RAMBytes a rough estimate of its memory.
func (m *Memory) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.st
	st.Buffered = len(m.ends)
	st.StoredKeys = uint64(len(m.seen))
	st.RAMBytes = int64(len(m.seen))*16 + int64(cap(m.arena)) + int64(cap(m.ends))*8
	return st
}
