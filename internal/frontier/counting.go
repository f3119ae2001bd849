package frontier

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

// countingMap counts the URLs admitted per scheme+authority (BUbiNG's
// schemeAuthority2Count) under its count key (see key): a map split into
// shards, each behind its own lock, so that parsers enqueueing links for
// different hosts rarely meet. A count key costs 16 bytes of map slot
// where a string key cost its header, its bytes and their allocation: the
// map holds a key per host met (10^6 and more in a large crawl).
//
// A count key is a 64-bit hash, so two scheme+authorities whose keys
// collide share one count (one budget): with the key's low 44 bits a hash
// of the scheme+authority, that is about 0.03 colliding pairs among 10^6
// keys of one group, fewer across groups.
type countingMap struct {
	group  func(sa []byte) uint64 // the hash of a scheme+authority's group (Assign.GroupHash)
	shards [64]countShard
}

type countShard struct {
	mu sync.Mutex
	m  map[uint64]int64
}

func (c *countingMap) init(group func(sa []byte) uint64) {
	c.group = group
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]int64)
	}
}

// key is the count key of scheme+authority sa: its group's slot in the top
// sieve.GroupBits bits (as in the sieve's hashes, so that a hand-off takes
// out the counts of the slots it moves), a hash of sa in the others.
func (c *countingMap) key(sa []byte) uint64 { return sieve.KeyHash(c.group(sa), sa) }

func (c *countingMap) shard(k uint64) *countShard { return &c.shards[k&63] }

// get returns the count of scheme+authority sa.
func (c *countingMap) get(sa []byte) int64 {
	k := c.key(sa)
	s := c.shard(k)
	s.mu.Lock()
	n := s.m[k]
	s.mu.Unlock()
	return n
}

// add increments the count of scheme+authority sa and returns the new
// count.
func (c *countingMap) add(sa []byte) int64 {
	k := c.key(sa)
	s := c.shard(k)
	s.mu.Lock()
	n := s.m[k] + 1
	s.m[k] = n
	s.mu.Unlock()
	return n
}

// take removes and returns the counts of the keys whose slot is in.
func (c *countingMap) take(in func(slot uint32) bool) map[uint64]int64 {
	out := map[uint64]int64{}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, v := range s.m {
			if in(sieve.Slot(k)) {
				out[k] = v
				delete(s.m, k)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// of returns a copy of the counts of the keys whose slot is in.
func (c *countingMap) of(in func(slot uint32) bool) map[uint64]int64 {
	out := map[uint64]int64{}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, v := range s.m {
			if in(sieve.Slot(k)) {
				out[k] = v
			}
		}
		s.mu.Unlock()
	}
	return out
}

// addAll adds counts to the map's.
func (c *countingMap) addAll(m map[uint64]int64) {
	for k, v := range m {
		s := c.shard(k)
		s.mu.Lock()
		s.m[k] += v
		s.mu.Unlock()
	}
}

// The counts file (SaveCounts, Config.Counts), version 2:
//
//	countsMagic                      "\x00petrel-counts 2\n"
//	(key uint64 little-endian, count uvarint)*
//
// Version 1, read and converted (each key hashed to its count key), had no
// header: (uvarint length, scheme+authority, uvarint count)*. Its first
// byte is never 0 (no key was empty), the first byte of version 2 always.
const countsMagic = "\x00petrel-counts 2\n"

// AppendCount appends one entry of a version 2 counts file (after its
// header): key's count n.
func AppendCount(dst []byte, key uint64, n int64) []byte {
	return binary.AppendUvarint(binary.LittleEndian.AppendUint64(dst, key), uint64(n))
}

// writeTo serialises the map in version 2.
func (c *countingMap) writeTo(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(countsMagic); err != nil {
		return err
	}
	var buf [8 + binary.MaxVarintLen64]byte
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, v := range s.m {
			b := AppendCount(buf[:0], k, v)
			if _, err := bw.Write(b); err != nil {
				s.mu.Unlock()
				return err
			}
		}
		s.mu.Unlock()
	}
	return bw.Flush()
}

// readFrom loads a counts file of either version, adding to the counts.
func (c *countingMap) readFrom(r io.Reader) error {
	return ReadCounts(r, c.key, func(k uint64, n int64) { c.shard(k).m[k] += n })
}

// ReadCounts reads a counts file (what SaveCounts wrote, of either
// version) and calls fn for each entry; key gives the count key of a
// version-1 entry's scheme+authority.
func ReadCounts(r io.Reader, key func(sa []byte) uint64, fn func(k uint64, n int64)) error {
	br := bufio.NewReader(r)
	first, err := br.Peek(1)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	if first[0] != 0 {
		return readCountsV1(br, key, fn)
	}
	magic := make([]byte, len(countsMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != countsMagic {
		return fmt.Errorf("counts: not a counts file of a version this Petrel reads (header %q)", magic)
	}
	var kb [8]byte
	for {
		if _, err := io.ReadFull(br, kb[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("counts: %w", err)
		}
		v, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("counts: %w", noEOF(err))
		}
		fn(binary.LittleEndian.Uint64(kb[:]), int64(v))
	}
}

// readCountsV1 reads the entries of a version-1 counts file.
func readCountsV1(br *bufio.Reader, key func(sa []byte) uint64, fn func(k uint64, n int64)) error {
	var sa []byte
	for {
		l, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("counts: %w", noEOF(err))
		}
		if l > 1<<16 {
			return fmt.Errorf("counts: key length %d too large", l)
		}
		sa = append(sa[:0], make([]byte, l)...)
		if _, err := io.ReadFull(br, sa); err != nil {
			return fmt.Errorf("counts: %w", noEOF(err))
		}
		v, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("counts: %w", noEOF(err))
		}
		fn(key(sa), int64(v))
	}
}

// noEOF turns the end of the file within an entry into ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
