package agent

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
)

// Digest filter files (state/payload-digests and state/text-digests) hold
// the Bloom filters of payload and text digests seen. A filter only saves
// work: without it, payloads stored before are stored in full again, which
// is what happens after a crash anyway (checkpoints do not hold the
// filters). So a clean stop writes them without waiting for the disk (no
// fsync: tens of MiB each, which used to be most of a stop's time), framed
// by a checksum, and a start that finds a file damaged — say by a power
// loss right after the stop — logs it and begins with an empty filter.
//
// Format:
//
//	"PDIGEST1"   magic, 8 bytes
//	filter       the filter's own serialisation (bits-and-blooms WriteTo)
//	CRC-32C      of the filter bytes (Castagnoli), 4 bytes, little endian

// digestFileMagic starts every digest filter file.
const digestFileMagic = "PDIGEST1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// saveDigestFilter writes a digest filter file at path through a temporary
// file renamed over it (no fsync, see above).
func saveDigestFilter(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	crc := crc32.New(castagnoli)
	_, _ = bw.WriteString(digestFileMagic)
	err = write(io.MultiWriter(bw, crc))
	if err == nil {
		_, err = bw.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// errDigestFile marks a digest filter file that is not whole.
var errDigestFile = errors.New("damaged digest filter file")

// loadDigestFilter reads the digest filter file at path with read. A
// missing file is no error (a new crawl); a damaged one is logged and
// skipped, leaving the filter empty. Other failures are returned.
func loadDigestFilter(path string, read func(io.Reader) error, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	body, err := checkDigestFile(data)
	if err != nil {
		log.Warn("digest filter not loaded: payloads and texts seen before the stop may be stored again",
			"file", path, "err", err)
		return nil
	}
	if err := read(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkDigestFile returns the filter bytes of a digest filter file, or
// an error wrapping errDigestFile.
func checkDigestFile(data []byte) ([]byte, error) {
	if len(data) < len(digestFileMagic)+4 || string(data[:len(digestFileMagic)]) != digestFileMagic {
		return nil, fmt.Errorf("%w: no %q header", errDigestFile, digestFileMagic)
	}
	body := data[len(digestFileMagic) : len(data)-4]
	if want, got := binary.LittleEndian.Uint32(data[len(data)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", errDigestFile, got, want)
	}
	return body, nil
}
