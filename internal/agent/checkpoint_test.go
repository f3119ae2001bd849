package agent

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// encodeTodoForTest builds a todo file as checkpoint writes it (trailer: count, CRC-32C).
func encodeTodoForTest(recs [][]byte) []byte {
	b := []byte(todoMagic)
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	sum := crc32.Checksum(b, crcTable)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	return binary.LittleEndian.AppendUint32(b, sum)
}

func TestParseTodo(t *testing.T) {
	// A todo file as checkpoint writes it, then damaged.
	recs := [][]byte{[]byte("\x00\x01\x00http://a.test/x"), []byte("\x00\x02\x01http://b.test/y?q")}
	b := encodeTodoForTest(recs)
	got, err := parseTodo(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[1]) != string(recs[1]) {
		t.Fatalf("parseTodo = %q", got)
	}
	for _, cut := range []int{len(b) - 1, len(b) - 5, len(todoMagic) + 3} {
		if _, err := parseTodo(b[:cut]); err == nil {
			t.Errorf("a todo cut at %d of %d bytes was accepted", cut, len(b))
		}
	}
	bad := append([]byte(nil), b...)
	bad[len(todoMagic)+5] ^= 1
	if _, err := parseTodo(bad); err == nil {
		t.Error("a corrupted todo was accepted")
	}
}
