package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// The placements' file (state/cluster/placements): a log of the hosts
// placed, each new placement appended at once (a write, no fsync: an agent
// killed keeps it), fsynced by Sync (the agent's checkpoints) and Close.
// A machine lost loses the placements made since the last Sync; those
// hosts are placed by a fresh resolution again. The file is not rolled
// back with a checkpoint: a placement made after it names where the
// host's URLs went, and the URLs a recovery finds again go there too.
//
// Format: the magic "PPLACE1\n", then records of 32 bytes (integers
// big-endian):
//
//	offset size
//	0      8    xxhash64 of the host name
//	8      1    address length n (4 or 16)
//	9      16   the address, then zeros
//	25     3    zeros
//	28     4    CRC-32C of bytes 0 to 27
//
// A later record of a host replaces an earlier one (a host forgotten to
// keep the bound and placed again). Reading stops at a record cut short
// (a write the kill interrupted) and skips one whose checksum fails, both
// counted. The file is rewritten from the map (temporary, fsync, rename)
// when opened with records to drop, and when the log reaches twice the
// bound.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	placementsMagic = "PPLACE1\n"
	placementSize   = 32
)

// placementLog is the file of a durable Placements; its methods are
// called with the Placements' mutex held.
type placementLog struct {
	path    string
	f       *os.File
	records int   // records in the file
	limit   int   // records that make add rewrite the file
	err     error // the first write error since the last Sync
	buf     [placementSize]byte
}

// OpenPlacements opens the Placements saved at path (an empty one if the
// file does not exist), keeping at most max hosts (MaxPlacements when
// max ≤ 0). dropped counts the records unreadable (cut short or damaged).
func OpenPlacements(path string, max int) (p *Placements, dropped int, err error) {
	p = NewPlacements(max)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, 0, err
	}
	records, dropped, err := p.load(path)
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: placements: %w", err)
	}
	p.log = &placementLog{path: path, records: records, limit: 2 * p.max}
	if records == 0 || dropped > 0 || records > len(p.m)+len(p.m)/2 {
		err = p.log.rewrite(p.m)
	} else {
		p.log.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: placements: %w", err)
	}
	return p, dropped, nil
}

// load replays the file at path into p.m.
func (p *Placements) load(path string) (records, dropped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	magic := make([]byte, len(placementsMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != placementsMagic {
		return 0, 0, fmt.Errorf("%s: not a placements file (bad magic)", path)
	}
	var rec [placementSize]byte
	for {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				dropped++
			} else if !errors.Is(err, io.EOF) {
				return 0, 0, err
			}
			return records, dropped, nil
		}
		records++
		h, a, ok := parsePlacement(rec[:])
		if !ok {
			dropped++
			continue
		}
		p.put(h, a)
	}
}

func appendPlacement(dst []byte, h uint64, a netip.Addr) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, h)
	b := a.Unmap().AsSlice()
	dst = append(dst, byte(len(b)))
	dst = append(dst, b...)
	dst = append(dst, make([]byte, 28-9-len(b))...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

func parsePlacement(rec []byte) (uint64, netip.Addr, bool) {
	if crc32.Checksum(rec[:28], castagnoli) != binary.BigEndian.Uint32(rec[28:]) || (rec[8] != 4 && rec[8] != 16) {
		return 0, netip.Addr{}, false
	}
	a, _ := netip.AddrFromSlice(rec[9 : 9+int(rec[8])])
	return binary.BigEndian.Uint64(rec), a, true
}

// add appends a placement, and rewrites the file from m once it holds
// twice the bound's worth of records.
func (l *placementLog) add(h uint64, a netip.Addr, m map[uint64]netip.Addr) {
	if l.err != nil {
		return
	}
	if l.records >= l.limit {
		l.err = l.rewrite(m)
		return
	}
	if _, err := l.f.Write(appendPlacement(l.buf[:0], h, a)); err != nil {
		l.err = err
		return
	}
	l.records++
}

// rewrite replaces the file with m's placements, durably, and reopens it
// for appending.
func (l *placementLog) rewrite(m map[uint64]netip.Addr) error {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	err := atomicfile.Write(l.path, atomicfile.Options{Sync: true, SyncDir: true, Buffer: 1 << 16}, func(w io.Writer) error {
		if _, err := io.WriteString(w, placementsMagic); err != nil {
			return err
		}
		for h, a := range m {
			if _, err := w.Write(appendPlacement(l.buf[:0], h, a)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	l.records = len(m)
	l.f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o644)
	return err
}

// Sync makes the placements made so far durable, and reports a write that
// failed since the last Sync (the placements after it are then kept in
// RAM only: their hosts are placed again by a fresh resolution after a
// restart). A Placements in RAM only has nothing to sync.
func (p *Placements) Sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.log
	if l == nil {
		return nil
	}
	err := l.err
	if err == nil && l.f != nil {
		err = l.f.Sync()
	}
	if err != nil {
		// Start over from the map: the file holds every placement again.
		l.err = l.rewrite(p.m)
		return fmt.Errorf("cluster: placements: %w", err)
	}
	return nil
}

// Close syncs and closes the file of a durable Placements; it keeps
// answering from RAM.
func (p *Placements) Close() error {
	err := p.Sync()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log != nil && p.log.f != nil {
		if cerr := p.log.f.Close(); err == nil {
			err = cerr
		}
	}
	p.log = nil
	return err
}
