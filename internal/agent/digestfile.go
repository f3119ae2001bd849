package agent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Digest filter files (state/payload-digests and state/text-digests) hold
// the Bloom filters of payload and text digests seen. A filter only saves
// work: without it, payloads stored before are stored in full again, which
// is what happens after a crash anyway (checkpoints do not hold the
// filters). So a clean stop writes them without waiting for the disk (no
// fsync: they grow with the crawl, to hundreds of MiB at 10^8 pages), framed
// by a checksum, and a start that finds a file damaged — say by a power
// loss right after the stop — logs it and begins with an empty filter.
//
// Format:
//
//	"PDIGEST2"   magic, 8 bytes
//	filter       a scalable Bloom filter (internal/bloom, "PBLOOM01")
//	CRC-32C      of the filter bytes (Castagnoli), 4 bytes, little endian
//
// Files of the formats before it ("PDIGEST1" framing a fixed-size
// bits-and-blooms filter, or that filter bare) are not read: the start
// that finds one logs it and begins with an empty filter (payloads and
// texts seen before are stored again, once), and the next clean stop
// replaces it.

// digestFileMagic starts every digest filter file.
const digestFileMagic = "PDIGEST2"

// saveDigestFilter writes a digest filter file at path (no fsync, see
// above).
func saveDigestFilter(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, atomicfile.Options{}, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if _, err := w.WriteString(digestFileMagic); err != nil {
			return err
		}
		crc := crc32.New(crcTable)
		if err := write(io.MultiWriter(w, crc)); err != nil {
			return err
		}
		if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
			return err
		}
		return w.Flush()
	})
}

// errDigestFile marks a digest filter file that is not whole.
var errDigestFile = errors.New("damaged digest filter file")

// loadDigestFilter reads the digest filter file at path with read. A
// missing file is no error (a new crawl); a damaged one is logged and
// skipped, leaving the filter empty. Other failures are returned. The file
// is streamed twice (checksum, then filter) rather than held in memory.
func loadDigestFilter(path string, read func(io.Reader) error, log *slog.Logger) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	framed, err := checkDigestFile(f)
	if err == nil && !framed {
		log.Warn("digest filter not loaded: it is of an older format; payloads and texts seen before the stop may be stored again",
			"file", path)
		return nil
	}
	if err != nil {
		if !errors.Is(err, errDigestFile) {
			return fmt.Errorf("%s: %w", path, err)
		}
		log.Warn("digest filter not loaded: payloads and texts seen before the stop may be stored again",
			"file", path, "err", err)
		return nil
	}
	if _, err := f.Seek(int64(len(digestFileMagic)), io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := read(bufio.NewReaderSize(f, 1<<20)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkDigestFile reads f to its end and reports whether it is a framed
// digest filter file whose checksum holds (true) or a file of a format
// before it (false, no current magic). A framed file that does not check
// is an error wrapping errDigestFile.
func checkDigestFile(f *os.File) (framed bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	magic, err := r.Peek(len(digestFileMagic))
	if err != nil || string(magic) != digestFileMagic {
		if fi.Size() == 0 {
			return false, fmt.Errorf("%w: empty", errDigestFile)
		}
		return false, nil
	}
	n := fi.Size() - int64(len(digestFileMagic)) - 4
	if n < 0 {
		return false, fmt.Errorf("%w: %d bytes", errDigestFile, fi.Size())
	}
	if _, err := r.Discard(len(digestFileMagic)); err != nil {
		return false, err
	}
	crc := crc32.New(crcTable)
	if _, err := io.CopyN(crc, r, n); err != nil {
		return false, fmt.Errorf("%w: %v", errDigestFile, err)
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return false, fmt.Errorf("%w: %v", errDigestFile, err)
	}
	if want, got := binary.LittleEndian.Uint32(sum[:]), crc.Sum32(); want != got {
		return false, fmt.Errorf("%w: checksum %08x, want %08x", errDigestFile, got, want)
	}
	return true, nil
}
