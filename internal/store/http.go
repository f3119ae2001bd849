package store

import (
	"bytes"
	"io"
	"strconv"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// httpResponse is the result of splitting a raw HTTP/1.x response as
// transferred into its protocol header and entity body.
type httpResponse struct {
	header  []byte // status line and header fields, including the blank line
	body    []byte // bytes after the blank line, as transferred
	status  int    // status code, 0 if the status line is unreadable
	chunked bool   // Transfer-Encoding lists "chunked"
	encoded bool   // Content-Encoding names a coding other than identity
	mime    string // Content-Type without parameters, case kept (as warcio indexes it)
}

// parseResponse splits raw at the end of its header block. A response cut
// short inside its header has no body: everything is header.
func parseResponse(raw []byte) httpResponse {
	var r httpResponse
	end := headerEnd(raw)
	if end < 0 {
		r.header = raw
	} else {
		r.header, r.body = raw[:end], raw[end:]
	}
	lines := r.header
	// Status line: "HTTP/1.1 200 OK".
	first, rest := cutLine(lines)
	if sp := bytes.IndexByte(first, ' '); sp >= 0 && len(first) >= sp+4 {
		if code, err := strconv.Atoi(string(first[sp+1 : sp+4])); err == nil {
			r.status = code
		}
	}
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		name := bytes.TrimSpace(line[:colon])
		value := bytes.TrimSpace(line[colon+1:])
		switch {
		case ascii.EqualFold(name, "transfer-encoding"):
			if containsFold(value, "chunked") {
				r.chunked = true
			}
		case ascii.EqualFold(name, "content-encoding"):
			if len(value) > 0 && !ascii.EqualFold(value, "identity") {
				r.encoded = true
			}
		case ascii.EqualFold(name, "content-type") && r.mime == "":
			if semi := bytes.IndexByte(value, ';'); semi >= 0 {
				value = value[:semi]
			}
			r.mime = string(bytes.TrimSpace(value))
		}
	}
	return r
}

// headerEnd returns the offset just past the blank line ending the header
// block ("\r\n\r\n", or a bare "\n\n" from a sloppy server), or -1.
func headerEnd(raw []byte) int {
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		if i < len(raw) && raw[i] == '\n' {
			return i + 1
		}
		if i+1 < len(raw) && raw[i] == '\r' && raw[i+1] == '\n' {
			return i + 2
		}
	}
	return -1
}

// cutLine returns the first line of b without its line ending, and the rest.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.TrimRight(b, "\r"), nil
	}
	return bytes.TrimRight(b[:i], "\r"), b[i+1:]
}

func containsFold(b []byte, s string) bool {
	return bytes.Contains(bytes.ToLower(b), []byte(s))
}

// dechunk writes the payload carried by the chunked body b to w. It
// tolerates a body cut short anywhere (the partial last chunk is kept) and
// ignores chunk extensions and trailers. If the very first chunk-size line is
// not valid, b is not chunked after all and ok is false; nothing is written.
func dechunk(w io.Writer, b []byte) (ok bool) {
	first := true
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		var line []byte
		if nl < 0 {
			line = b
		} else {
			line = b[:nl]
		}
		if semi := bytes.IndexByte(line, ';'); semi >= 0 {
			line = line[:semi]
		}
		line = bytes.TrimSpace(line)
		size, err := strconv.ParseUint(string(line), 16, 63)
		if err != nil {
			return !first
		}
		if nl < 0 {
			return true // cut short inside a chunk-size line
		}
		first = false
		b = b[nl+1:]
		if size == 0 {
			return true
		}
		if uint64(len(b)) <= size {
			_, _ = w.Write(b)
			return true
		}
		_, _ = w.Write(b[:size])
		b = b[size:]
		if len(b) > 0 && b[0] == '\r' {
			b = b[1:]
		}
		if len(b) > 0 && b[0] == '\n' {
			b = b[1:]
		}
	}
	return true
}
