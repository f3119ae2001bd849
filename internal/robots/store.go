package robots

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/petrel-crawler/petrel/internal/framelog"
)

// A Store keeps the robots.txt outcome of every authority a crawler has
// let go of in RAM, in one append-only file, so that it is answered from
// disk, not fetched again. RAM holds only an index: 16 bytes of payload
// per authority (a 64-bit hash of the authority, and the position and size
// of its newest record).
//
// # File format
//
// A store file starts with the 16-byte header "petrel robots 1\n" and
// holds records back to back, each a frame of package framelog (uint32
// LE length of the body, uint32 LE CRC-32C of the body, the body) whose
// body is:
//
//	uvarint  length of the authority, then the authority ("https://example.com")
//	byte     kind: 1 rules, 2 dead (robots.txt unavailable after every retry)
//	varint   when, Unix nanoseconds: the end of the fetch that gave the
//	         rules, or when the authority was declared dead
//	rest     kind 1: the rules' flat form (see [Rules]); kind 2: nothing
//
// The newest record of an authority is the one in force. Records are not
// synced as they are written: [OpenStore] reads the file from the start
// and keeps the records up to the first one that is short or fails its
// checksum (the tail a crash may leave), cutting the file there. A record
// lost so is a robots.txt fetched again, never a wrong answer: no page of
// an authority is fetched before its rules are known, and rules not found
// are fetched anew. What is synced is what a restart needs to open the
// file at all: the header of a new file, and a compacted file before it is
// renamed over the old one (with the directory after the rename), so that
// a crash of the machine leaves the old file or the whole new one, never a
// file without its header.
//
// A Store is independent of the crawl's checkpoints: each record is what an
// authority's robots.txt said at a wall time, so a crawl restored from any
// checkpoint may use every record whose expiry has not passed.
//
// When an authority's hash collides with another's, the newer record wins
// the index slot and the other authority is not found (its robots.txt is
// fetched again): a Get never answers for an authority other than the one
// asked, as the record holds the authority and is checked.
//
// Records replaced by newer ones are garbage; when garbage is more than
// half the file and the file is larger than 64 MiB, the next Put
// rewrites the live records into a new file, renamed over the old one.
//
// A Store is safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	path      string
	f         *os.File
	w         *bufio.Writer
	size      int64 // bytes in the file, written or buffered
	flushed   int64 // bytes of the file on disk (not in w)
	garbage   int64 // bytes of records no longer in force
	idx       map[uint64]uint64
	seed      maphash.Seed
	buf       []byte // a record's frame (Put) or a record read (Get)
	body      []byte // Put's scratch for a record's body
	err       error  // a write failed: the store takes no more records
	compactAt int64  // the file size from which garbage is compacted
	fsync     func(*os.File) error
}

// Entry is what a store holds of one authority.
type Entry struct {
	When  time.Time // the end of the fetch that gave Rules, or when it died
	Dead  bool      // robots.txt unavailable after every retry
	Rules Rules     // when not Dead
}

const (
	storeHeader  = "petrel robots 1\n"
	kindRules    = 1
	kindDead     = 2
	maxRecord    = 1<<24 - 16 // a record's size fits the index's 24 bits
	compactBytes = 64 << 20
)

// ErrBadStore reports a file that is not a robots store.
var ErrBadStore = errors.New("robots: not a robots store file")

// OpenStore opens the store file at path, creating it if it does not
// exist, and indexes its records.
func OpenStore(path string) (*Store, error) {
	return openStore(path, (*os.File).Sync)
}

// openStore is OpenStore with the function that syncs a file (a test's
// records what is synced when).
func openStore(path string, fsync func(*os.File) error) (*Store, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("robots: open store: %w", err)
	}
	s := &Store{path: path, f: f, idx: make(map[uint64]uint64), seed: maphash.MakeSeed(), compactAt: compactBytes, fsync: fsync}
	if err := s.load(); err != nil {
		f.Close()
		return nil, err
	}
	s.w = bufio.NewWriterSize(f, 64<<10)
	return s, nil
}

// load reads the file's records into the index and cuts a torn tail.
func (s *Store) load() error {
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("robots: store: %w", err)
	}
	if st.Size() == 0 {
		if _, err := s.f.WriteString(storeHeader); err != nil {
			return fmt.Errorf("robots: store: %w", err)
		}
		if err := s.fsync(s.f); err != nil {
			return fmt.Errorf("robots: store: sync header: %w", err)
		}
		syncDir(filepath.Dir(s.path))
		s.size, s.flushed = int64(len(storeHeader)), int64(len(storeHeader))
		return nil
	}
	head := make([]byte, len(storeHeader))
	if _, err := s.f.ReadAt(head, 0); err != nil || string(head) != storeHeader {
		return fmt.Errorf("%w: %s", ErrBadStore, s.path)
	}
	off := int64(len(storeHeader))
	r := framelog.NewReader(io.NewSectionReader(s.f, off, st.Size()-off), 1<<20, maxRecord-framelog.HeaderLen)
	for {
		body, err := r.Next()
		if err != nil {
			break
		}
		sa, _, err := decodeBody(body)
		if err != nil {
			break
		}
		s.index(sa, off, int64(framelog.HeaderLen+len(body)))
		off += int64(framelog.HeaderLen + len(body))
	}
	if off < st.Size() {
		if err := s.f.Truncate(off); err != nil {
			return fmt.Errorf("robots: store: cut torn tail: %w", err)
		}
	}
	if _, err := s.f.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("robots: store: %w", err)
	}
	s.size, s.flushed = off, off
	return nil
}

// index makes the record at off (size bytes) the one in force for sa.
func (s *Store) index(sa string, off, size int64) {
	k := maphash.String(s.seed, sa)
	if old, ok := s.idx[k]; ok {
		s.garbage += int64(old & (1<<24 - 1))
	}
	s.idx[k] = uint64(off)<<24 | uint64(size)
}

// Len is the number of authorities indexed.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.idx)
}

// Put records e as sa's entry in force.
func (s *Store) Put(sa string, e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.garbage*2 > s.size && s.size > s.compactAt {
		if err := s.compact(); err != nil {
			s.err = err
			return err
		}
	}
	s.body = encodeBody(s.body[:0], sa, e)
	s.buf = framelog.Append(s.buf[:0], s.body)
	if len(s.buf) > maxRecord {
		return fmt.Errorf("robots: store: record of %s too large (%d bytes)", sa, len(s.buf))
	}
	if _, err := s.w.Write(s.buf); err != nil {
		s.err = fmt.Errorf("robots: store: %w", err)
		return s.err
	}
	s.index(sa, s.size, int64(len(s.buf)))
	s.size += int64(len(s.buf))
	return nil
}

// Get returns sa's entry in force, if the store has one.
func (s *Store) Get(sa string) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.idx[maphash.String(s.seed, sa)]
	if !ok {
		return Entry{}, false, nil
	}
	off, size := int64(v>>24), int64(v&(1<<24-1))
	if off+size > s.flushed {
		if err := s.flush(); err != nil {
			return Entry{}, false, err
		}
	}
	if cap(s.buf) < int(size) {
		s.buf = make([]byte, size)
	}
	rec := s.buf[:size]
	if _, err := s.f.ReadAt(rec, off); err != nil {
		return Entry{}, false, fmt.Errorf("robots: store: read: %w", err)
	}
	body, err := framelog.Body(rec)
	if err != nil {
		return Entry{}, false, fmt.Errorf("robots: store: record at %d: %w", off, ErrBadStore)
	}
	got, e, err := decodeBody(body)
	if err != nil || got != sa {
		return Entry{}, false, err // another authority of the same hash
	}
	return e, true, nil
}

// Flush writes the records buffered to the file (without syncing it: see
// the type's doc for why a record need not be durable).
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush()
}

func (s *Store) flush() error {
	if s.err != nil {
		return s.err
	}
	if err := s.w.Flush(); err != nil {
		s.err = fmt.Errorf("robots: store: %w", err)
		return s.err
	}
	s.flushed = s.size
	return nil
}

// compact rewrites the records in force into a new file that replaces the
// old one.
func (s *Store) compact() error {
	if err := s.flush(); err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	nf, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("robots: store: compact: %w", err)
	}
	w := bufio.NewWriterSize(nf, 1<<20)
	w.WriteString(storeHeader)
	off := int64(len(storeHeader))
	idx := make(map[uint64]uint64, len(s.idx))
	var rec []byte
	for k, v := range s.idx {
		o, size := int64(v>>24), int64(v&(1<<24-1))
		rec = append(rec[:0], make([]byte, size)...)
		if _, err := s.f.ReadAt(rec, o); err != nil {
			nf.Close()
			os.Remove(tmp)
			return fmt.Errorf("robots: store: compact: %w", err)
		}
		w.Write(rec)
		idx[k] = uint64(off)<<24 | uint64(size)
		off += size
	}
	err = w.Flush()
	if err == nil {
		err = s.fsync(nf)
	}
	if err != nil {
		nf.Close()
		os.Remove(tmp)
		return fmt.Errorf("robots: store: compact: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		nf.Close()
		os.Remove(tmp)
		return fmt.Errorf("robots: store: compact: %w", err)
	}
	syncDir(filepath.Dir(s.path))
	s.f.Close()
	s.f, s.idx, s.size, s.flushed, s.garbage = nf, idx, off, off, 0
	s.w = bufio.NewWriterSize(nf, 64<<10)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Close writes what is buffered and closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.flush()
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("robots: store: %w", cerr)
	}
	return err
}

// Bytes is the size of the store file.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

func encodeBody(b []byte, sa string, e Entry) []byte {
	b = appendUvarint(b, uint64(len(sa)))
	b = append(b, sa...)
	if e.Dead {
		b = append(b, kindDead)
	} else {
		b = append(b, kindRules)
	}
	b = binary.AppendVarint(b, e.When.UnixNano())
	if !e.Dead {
		b, _ = e.Rules.AppendBinary(b)
	}
	return b
}

func decodeBody(b []byte) (string, Entry, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) || int(l)+n >= len(b) {
		return "", Entry{}, ErrBadStore
	}
	sa := string(b[n : n+int(l)])
	b = b[n+int(l):]
	kind := b[0]
	when, m := binary.Varint(b[1:])
	if m <= 0 || kind != kindRules && kind != kindDead {
		return "", Entry{}, ErrBadStore
	}
	e := Entry{When: time.Unix(0, when), Dead: kind == kindDead}
	rest := b[1+m:]
	if e.Dead {
		if len(rest) != 0 {
			return "", Entry{}, ErrBadStore
		}
		return sa, e, nil
	}
	r, err := FromBinary(rest)
	if err != nil {
		return "", Entry{}, ErrBadStore
	}
	e.Rules = r
	return sa, e, nil
}
