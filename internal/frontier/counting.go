package frontier

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// countingMap counts the URLs admitted per key (BUbiNG's
// schemeAuthority2Count): a map split into shards, each behind its own
// lock, so that parsers enqueueing links for different hosts rarely meet.
type countingMap struct {
	shards [64]countShard
}

type countShard struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *countingMap) init() {
	for i := range c.shards {
		c.shards[i].m = make(map[string]int64)
	}
}

func (c *countingMap) shard(k []byte) *countShard {
	return &c.shards[xxhash.Sum64(k)&63]
}

// get returns the count of key k.
func (c *countingMap) get(k []byte) int64 {
	s := c.shard(k)
	s.mu.Lock()
	n := s.m[string(k)]
	s.mu.Unlock()
	return n
}

// add increments the count of k and returns the new count.
func (c *countingMap) add(k []byte) int64 {
	s := c.shard(k)
	s.mu.Lock()
	n := s.m[string(k)] + 1
	s.m[string(k)] = n
	s.mu.Unlock()
	return n
}

// writeTo serialises the map: uvarint count, then (uvarint len, key,
// uvarint value) per entry.
func (c *countingMap) writeTo(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, v := range s.m {
			buf = binary.AppendUvarint(buf[:0], uint64(len(k)))
			buf = append(buf, k...)
			buf = binary.AppendUvarint(buf, uint64(v))
			if _, err := bw.Write(buf); err != nil {
				s.mu.Unlock()
				return err
			}
		}
		s.mu.Unlock()
	}
	return bw.Flush()
}

// readFrom loads what writeTo wrote.
func (c *countingMap) readFrom(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		l, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("counts: %w", err)
		}
		if l > 1<<16 {
			return fmt.Errorf("counts: key length %d too large", l)
		}
		k := make([]byte, l)
		if _, err := io.ReadFull(br, k); err != nil {
			return fmt.Errorf("counts: %w", err)
		}
		v, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("counts: %w", err)
		}
		s := c.shard(k)
		s.m[string(k)] = int64(v)
	}
}
