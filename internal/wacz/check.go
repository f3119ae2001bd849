package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
)

// CheckResult tells what Check verified.
type CheckResult struct {
	Resources  int   // resources whose size and hash match
	IndexLines int64 // index lines whose record was found
}

// Check verifies the WACZ file at path: datapackage.json lists every file
// with its true size and SHA-256; datapackage-digest.json holds the hash of
// datapackage.json; archive/ and indexes/ entries are stored, not
// compressed; the index is sorted, and every index line points at a record
// of its WARC file whose target URI, payload digest and date are the line's
// (and whose gzip member is the line's length). It returns the first
// problem found.
func Check(path string) (CheckResult, error) {
	var res CheckResult
	zr, err := zip.OpenReader(path)
	if err != nil {
		return res, fmt.Errorf("wacz: %s: %w", path, err)
	}
	defer zr.Close()
	raw, err := os.Open(path)
	if err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	defer raw.Close()
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
		if (strings.HasPrefix(f.Name, "archive/") || strings.HasPrefix(f.Name, "indexes/")) && f.Method != zip.Store {
			return res, fmt.Errorf("wacz: %s is compressed (method %d); archive/ and indexes/ must be stored", f.Name, f.Method)
		}
	}
	dpBytes, err := readEntry(files, "datapackage.json")
	if err != nil {
		return res, err
	}
	var dp dataPackage
	if err := json.Unmarshal(dpBytes, &dp); err != nil {
		return res, fmt.Errorf("wacz: datapackage.json: %w", err)
	}
	if dp.Profile != "data-package" || dp.WACZVersion == "" {
		return res, fmt.Errorf("wacz: datapackage.json: profile %q, wacz_version %q", dp.Profile, dp.WACZVersion)
	}
	if err := checkDigestFile(files, dpBytes); err != nil {
		return res, err
	}
	listed := map[string]bool{}
	for _, r := range dp.Resources {
		if err := checkResource(files, r); err != nil {
			return res, err
		}
		listed[r.Path] = true
		res.Resources++
	}
	for name := range files {
		if name != "datapackage.json" && name != "datapackage-digest.json" && !strings.HasSuffix(name, "/") && !listed[name] {
			return res, fmt.Errorf("wacz: %s is not listed in datapackage.json", name)
		}
	}
	v := &verifier{files: files, raw: raw}
	switch {
	case files["indexes/index.cdxj"] != nil:
		rc, err := files["indexes/index.cdxj"].Open()
		if err != nil {
			return res, fmt.Errorf("wacz: indexes/index.cdxj: %w", err)
		}
		err = v.lines(rc, "indexes/index.cdxj")
		rc.Close()
		if err != nil {
			return res, err
		}
	case files["indexes/index.idx"] != nil:
		if err := v.zipNum(); err != nil {
			return res, err
		}
	default:
		return res, errors.New("wacz: no index (indexes/index.cdxj or indexes/index.idx)")
	}
	res.IndexLines = v.n
	return res, nil
}

func readEntry(files map[string]*zip.File, name string) ([]byte, error) {
	f := files[name]
	if f == nil {
		return nil, fmt.Errorf("wacz: no %s", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("wacz: %s: %w", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("wacz: %s: %w", name, err)
	}
	return b, nil
}

func checkDigestFile(files map[string]*zip.File, dp []byte) error {
	b, err := readEntry(files, "datapackage-digest.json")
	if err != nil {
		return err
	}
	var d digestFile
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("wacz: datapackage-digest.json: %w", err)
	}
	sum := sha256.Sum256(dp)
	if want := "sha256:" + hex.EncodeToString(sum[:]); d.Path != "datapackage.json" || d.Hash != want {
		return fmt.Errorf("wacz: datapackage-digest.json names %s %s; datapackage.json is %s", d.Path, d.Hash, want)
	}
	return nil
}

func checkResource(files map[string]*zip.File, r resource) error {
	f := files[r.Path]
	if f == nil {
		return fmt.Errorf("wacz: datapackage.json lists %s, which is not in the package", r.Path)
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", r.Path, err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", r.Path, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); n != r.Bytes || got != r.Hash {
		return fmt.Errorf("wacz: %s is %d bytes, %s; datapackage.json says %d bytes, %s", r.Path, n, got, r.Bytes, r.Hash)
	}
	return nil
}

// verifier checks index lines against the records they point at.
type verifier struct {
	files map[string]*zip.File
	raw   *os.File
	prev  []byte
	n     int64
}

// lines checks every line of an index.
func (v *verifier) lines(r io.Reader, what string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if v.prev != nil && bytes.Compare(v.prev, line) > 0 {
			return fmt.Errorf("wacz: %s is not sorted at %q", what, line)
		}
		v.prev = append(v.prev[:0], line...)
		if err := v.line(line); err != nil {
			return fmt.Errorf("wacz: %s: %w", what, err)
		}
		v.n++
	}
	return sc.Err()
}

// line checks one index line.
func (v *verifier) line(line []byte) error {
	key, rest, _ := bytes.Cut(line, []byte{' '})
	stamp, js, _ := bytes.Cut(rest, []byte{' '})
	var f struct {
		URL, Digest, Length, Offset, Filename string
	}
	if err := json.Unmarshal(js, &f); err != nil {
		return fmt.Errorf("line %q: %w", line, err)
	}
	if store.SURT(f.URL) != string(key) {
		return fmt.Errorf("line %q: key is not the URL's", line)
	}
	zf := v.files["archive/"+f.Filename]
	if zf == nil {
		return fmt.Errorf("line %q: no archive/%s", line, f.Filename)
	}
	var off, length int64
	if _, err := fmt.Sscan(f.Offset, &off); err != nil {
		return fmt.Errorf("line %q: offset: %w", line, err)
	}
	if _, err := fmt.Sscan(f.Length, &length); err != nil {
		return fmt.Errorf("line %q: length: %w", line, err)
	}
	data, err := zf.DataOffset()
	if err != nil {
		return err
	}
	size := int64(zf.UncompressedSize64)
	if off < 0 || length <= 0 || off+length > size {
		return fmt.Errorf("line %q: record outside %s (%d bytes)", line, f.Filename, size)
	}
	sec := io.NewSectionReader(v.raw, data, size)
	rec, err := store.ReadRecordAt(io.NewSectionReader(sec, off, length), 0)
	if err != nil {
		return fmt.Errorf("line %q: no whole record at offset %d of %s within its length: %w", line, off, f.Filename, err)
	}
	if off+length < size {
		var magic [2]byte
		if _, err := sec.ReadAt(magic[:], off+length); err != nil || magic != [2]byte{0x1f, 0x8b} {
			return fmt.Errorf("line %q: length %d does not end at the next record", line, length)
		}
	}
	h := store.RecordFields(rec)
	date, _ := time.Parse(time.RFC3339Nano, h.Get("WARC-Date"))
	switch {
	case h.Get("WARC-Target-URI") != f.URL:
		return fmt.Errorf("line %q: the record is of %s", line, h.Get("WARC-Target-URI"))
	case strings.TrimPrefix(h.Get("WARC-Payload-Digest"), "sha1:") != f.Digest:
		return fmt.Errorf("line %q: the record's payload digest is %s", line, h.Get("WARC-Payload-Digest"))
	case date.UTC().Format("20060102150405") != string(stamp):
		return fmt.Errorf("line %q: the record's date is %s", line, h.Get("WARC-Date"))
	}
	return nil
}

// zipNum checks indexes/index.idx and every block of indexes/index.cdx.gz
// it points at, then every line of those blocks.
func (v *verifier) zipNum() error {
	idx, err := readEntry(v.files, "indexes/index.idx")
	if err != nil {
		return err
	}
	cdx := v.files["indexes/index.cdx.gz"]
	if cdx == nil {
		return errors.New("wacz: index.idx without index.cdx.gz")
	}
	data, err := cdx.DataOffset()
	if err != nil {
		return err
	}
	size := int64(cdx.UncompressedSize64)
	var covered int64
	for i, line := range bytes.Split(bytes.TrimSpace(idx), []byte{'\n'}) {
		if i == 0 && bytes.HasPrefix(line, []byte("!meta")) {
			continue
		}
		j := bytes.Index(line, []byte(" {"))
		if j < 0 {
			return fmt.Errorf("wacz: index.idx line %q", line)
		}
		var b struct {
			Offset, Length int64
			Digest         string
		}
		if err := json.Unmarshal(line[j+1:], &b); err != nil {
			return fmt.Errorf("wacz: index.idx line %q: %w", line, err)
		}
		if b.Offset != covered || b.Length <= 0 || b.Offset+b.Length > size {
			return fmt.Errorf("wacz: index.idx line %q: block does not follow the one before", line)
		}
		covered += b.Length
		block := make([]byte, b.Length)
		if _, err := v.raw.ReadAt(block, data+b.Offset); err != nil {
			return fmt.Errorf("wacz: index.cdx.gz: %w", err)
		}
		sum := sha256.Sum256(block)
		if b.Digest != "" && b.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
			return fmt.Errorf("wacz: index.idx line %q: block digest differs", line)
		}
		gz, err := gzip.NewReader(bytes.NewReader(block))
		if err != nil {
			return fmt.Errorf("wacz: index.cdx.gz block at %d: %w", b.Offset, err)
		}
		text, err := io.ReadAll(gz)
		if err != nil {
			return fmt.Errorf("wacz: index.cdx.gz block at %d: %w", b.Offset, err)
		}
		if !bytes.HasPrefix(text, append(append([]byte(nil), line[:j]...), ' ')) {
			return fmt.Errorf("wacz: index.idx line %q does not name its block's first line", line)
		}
		if err := v.lines(bytes.NewReader(text), "indexes/index.cdx.gz"); err != nil {
			return err
		}
	}
	if covered != size {
		return fmt.Errorf("wacz: index.idx covers %d of the %d bytes of index.cdx.gz", covered, size)
	}
	return nil
}
