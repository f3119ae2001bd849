package framelog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Scan reads the log file at path: a header of headLen bytes starting
// with magic, then frames of at most max bytes. It calls fn (if not nil)
// with each frame's body (valid during the call) and the body's offset in the file;
// fn returning ErrTorn makes the frame torn (a body the log cannot
// parse), another error ends Scan with it. It returns the header (nil
// when the file is shorter: killed while it was started), the offset
// after the last whole frame, and whether a torn frame follows. A header
// that does not start with magic is an error. A body longer than the file
// is torn whatever max is.
func Scan(path, magic string, headLen int, max uint32, fn func(body []byte, off int64) error) (head []byte, good int64, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < int64(max) {
		max = uint32(st.Size())
	}
	r := NewReader(f, 1<<20, max)
	head = make([]byte, headLen)
	if _, err := io.ReadFull(r.r, head); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, true, nil // killed while it was started
		}
		return nil, 0, false, fmt.Errorf("%s: %w", path, err)
	}
	if string(head[:len(magic)]) != magic {
		return nil, 0, false, fmt.Errorf("%s: not the log expected (magic %q)", path, head[:len(magic)])
	}
	good = int64(headLen)
	for {
		body, err := r.Next()
		if err == io.EOF {
			return head, good, false, nil
		}
		if err == nil && fn != nil {
			err = fn(body, good+HeaderLen)
		}
		if errors.Is(err, ErrTorn) {
			return head, good, true, nil
		}
		if err != nil {
			return head, good, false, err
		}
		good += HeaderLen + int64(len(body))
	}
}

// Rewrite replaces the file at path with head and the frames of the
// bodies each puts, durably: through a temporary, fsynced, renamed over
// path, and (with syncDir) the directory fsynced.
func Rewrite(path string, head []byte, syncDir bool, each func(put func(body []byte) error) error) error {
	opts := atomicfile.Options{Sync: true, SyncDir: syncDir, Buffer: 1 << 16}
	return atomicfile.Write(path, opts, func(w io.Writer) error {
		if _, err := w.Write(head); err != nil {
			return err
		}
		var buf []byte
		return each(func(body []byte) error {
			buf = Append(buf[:0], body)
			_, err := w.Write(buf)
			return err
		})
	})
}

// A log of segment files names each by a number: 20 decimal digits and
// ".log".

// SegmentPath returns the path of segment num in dir.
func SegmentPath(dir string, num uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.log", num))
}

// Segments returns the numbers of the segment files in dir, ascending.
func Segments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var nums []uint64
	for _, d := range ents {
		s, ok := strings.CutSuffix(d.Name(), ".log")
		if n, err := strconv.ParseUint(s, 10, 64); ok && len(s) == 20 && err == nil && !d.IsDir() {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}
