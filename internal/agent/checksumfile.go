package agent

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Checksums of state files that have no framing of their own (state/counts,
// state/stats.json, and theirs in a checkpoint). Beside NAME, NAME.crc
// holds one line, "crc32c HHHHHHHH size N": the CRC-32C (Castagnoli, hex)
// and the length of NAME as written. A NAME that no longer matches its
// NAME.crc is corrupt. A NAME without NAME.crc (written by an earlier
// Petrel) is taken as it is.

// checksumSuffix names the checksum file of a state file.
const checksumSuffix = ".crc"

// writeChecked writes path through atomicfile (synced), then its checksum
// file.
func writeChecked(path string, write func(io.Writer) error) error {
	h := crc32.New(crcTable)
	err := atomicfile.Write(path, atomicfile.Options{Sync: true}, func(w io.Writer) error {
		return write(io.MultiWriter(w, h))
	})
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return writeChecksum(path, h.Sum32(), fi.Size())
}

// writeChecksum writes path's checksum file for the sum and length given.
func writeChecksum(path string, sum uint32, n int64) error {
	line := fmt.Sprintf("crc32c %08x size %d\n", sum, n)
	return atomicfile.WriteBytes(path+checksumSuffix, []byte(line), atomicfile.Options{Sync: true})
}

// checksumOf reads path through and returns its CRC-32C and length.
func checksumOf(path string) (uint32, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(crcTable)
	n, err := io.Copy(h, f)
	return h.Sum32(), n, err
}

// rechecksum writes the checksum file of path as it is now (after an
// append).
func rechecksum(path string) error {
	sum, n, err := checksumOf(path)
	if err != nil {
		return err
	}
	return writeChecksum(path, sum, n)
}

// verifyChecksum checks path against its checksum file. A missing path,
// or one without a checksum file, is no error.
func verifyChecksum(path string) error {
	b, err := os.ReadFile(path + checksumSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var want uint32
	var size int64
	if _, err := fmt.Sscanf(string(b), "crc32c %x size %d\n", &want, &size); err != nil {
		return fmt.Errorf("%s: corrupt: %q", filepath.Base(path)+checksumSuffix, b)
	}
	sum, n, err := checksumOf(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: missing (its checksum file is there)", filepath.Base(path))
	}
	if err != nil {
		return err
	}
	if sum != want || n != size {
		return fmt.Errorf("%s: corrupt: %d bytes with CRC-32C %08x, written as %d bytes with %08x", filepath.Base(path), n, sum, size, want)
	}
	return nil
}
