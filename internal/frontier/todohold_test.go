package frontier

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// A TodoHold gives back, framed and in order, the records it held across
// its chunks; it refuses every record once one would pass its limit, until
// WriteTo, and holds again after it.
func TestTodoHold(t *testing.T) {
	var h TodoHold
	h.Limit = 3*todoChunk + 100
	var want bytes.Buffer
	held := 0
	for i := 0; ; i++ {
		rec := bytes.Repeat([]byte{byte(i)}, 1+(i*7919)%5000) // records cross chunk boundaries
		if !h.Hold(rec) {
			break
		}
		want.Write(binary.AppendUvarint(nil, uint64(len(rec))))
		want.Write(rec)
		held++
	}
	if !h.Refused() || h.Hold([]byte("x")) {
		t.Fatal("a record was held after one was refused")
	}
	if h.Len() != want.Len() || h.Len() > h.Limit {
		t.Fatalf("Len = %d, want %d (limit %d)", h.Len(), want.Len(), h.Limit)
	}
	var got bytes.Buffer
	if n, err := h.WriteTo(&got); err != nil || n != int64(want.Len()) {
		t.Fatalf("WriteTo = %d, %v; want %d bytes", n, err, want.Len())
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("WriteTo gave other bytes than the %d records held", held)
	}
	chunks := len(h.chunks)
	if h.Len() != 0 || h.Refused() || !h.Hold([]byte("again")) {
		t.Fatal("a TodoHold written out does not hold again")
	}
	got.Reset()
	h.WriteTo(&got)
	if !bytes.Equal(got.Bytes(), []byte("\x05again")) || len(h.chunks) != chunks {
		t.Fatalf("second use: %q, %d chunks (had %d)", got.Bytes(), len(h.chunks), chunks)
	}
}
