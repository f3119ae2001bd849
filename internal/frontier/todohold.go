package frontier

import (
	"encoding/binary"
	"io"
)

// DefaultTodoHoldBytes is how much of a checkpoint's todo records a
// TodoHold keeps in RAM when its Limit is zero.
const DefaultTodoHoldBytes = 64 << 20

// todoChunk is the size of a TodoHold's chunks.
const todoChunk = 1 << 20

// TodoHold keeps the first records a CheckpointSink's WriteTodo gets in RAM
// during the scheduler's pause, each framed as its uvarint length then its
// bytes (the todo file's framing), so that the pause does not wait for the
// file's writes; the sink writes them out after the pause (WriteTo).
//
// Its bytes live in fixed chunks of 1 MiB: holding more allocates a chunk
// and never copies what is held, and a TodoHold used again (after WriteTo)
// reuses the chunks it has, so that a pause costs no growth of a buffer of
// tens of MiB (the copies, and the garbage collections they bring).
//
// The zero value holds up to DefaultTodoHoldBytes. Not safe for concurrent
// use.
type TodoHold struct {
	// Limit bounds the bytes held (0: DefaultTodoHoldBytes). Hold refuses a
	// record that would go past it, and every record after it until WriteTo.
	Limit int

	chunks [][]byte // chunks[:used] hold data; the rest are empty spares
	used   int
	n      int
	full   bool
	hdr    [binary.MaxVarintLen64]byte
}

// Hold adds rec to the records held and reports true, or reports false,
// holding nothing, once the limit is reached: the caller then writes rec,
// and every later record, after those held.
func (h *TodoHold) Hold(rec []byte) bool {
	limit := h.Limit
	if limit <= 0 {
		limit = DefaultTodoHoldBytes
	}
	if h.full || h.n+len(rec)+binary.MaxVarintLen64 > limit {
		h.full = true
		return false
	}
	h.add(binary.AppendUvarint(h.hdr[:0], uint64(len(rec))))
	h.add(rec)
	return true
}

// Refused reports whether a record has been refused since the last WriteTo.
func (h *TodoHold) Refused() bool { return h.full }

// Len returns the bytes held.
func (h *TodoHold) Len() int { return h.n }

// add appends b across the chunks, taking a spare or a new chunk when the
// last one is full.
func (h *TodoHold) add(b []byte) {
	h.n += len(b)
	for len(b) > 0 {
		if h.used == 0 || len(h.chunks[h.used-1]) == todoChunk {
			if h.used == len(h.chunks) {
				h.chunks = append(h.chunks, make([]byte, 0, todoChunk))
			}
			h.used++
		}
		c := &h.chunks[h.used-1]
		k := min(len(b), todoChunk-len(*c))
		*c = append(*c, b[:k]...)
		b = b[k:]
	}
}

// WriteTo writes the records held to w, in the order held, and empties h
// for its next use (Reset).
func (h *TodoHold) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var err error
	for i := range h.used {
		if err == nil {
			var k int
			k, err = w.Write(h.chunks[i])
			total += int64(k)
		}
	}
	h.Reset()
	return total, err
}

// Reset empties h without writing what it holds, keeping its chunks.
func (h *TodoHold) Reset() {
	for i := range h.used {
		h.chunks[i] = h.chunks[i][:0]
	}
	h.used, h.n, h.full = 0, 0, false
}
