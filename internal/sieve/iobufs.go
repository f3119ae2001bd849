package sieve

import (
	"bufio"
	"io"
	"sync"
)

// ioBufs keeps the buffers of store files for the next flush. A flush
// reads and writes every touched bucket's file, each through a buffer of
// ioBufSize, a block of blockKeys hashes and a block's encoding: made
// anew, that is ~12 MiB allocated and cleared per flush of the default 16
// buckets, whatever the flush's size. A nil *ioBufs allocates every time.
type ioBufs struct {
	writers, readers, blocks, encs sync.Pool
}

func (p *ioBufs) writer(w io.Writer) *bufio.Writer {
	if p != nil {
		if bw, ok := p.writers.Get().(*bufio.Writer); ok {
			bw.Reset(w)
			return bw
		}
	}
	return bufio.NewWriterSize(w, ioBufSize)
}

func (p *ioBufs) reader(r io.Reader) *bufio.Reader {
	if p != nil {
		if br, ok := p.readers.Get().(*bufio.Reader); ok {
			br.Reset(r)
			return br
		}
	}
	return bufio.NewReaderSize(r, ioBufSize)
}

func (p *ioBufs) block() []uint64 {
	if p != nil {
		if b, ok := p.blocks.Get().(*[]uint64); ok {
			return (*b)[:0]
		}
	}
	return make([]uint64, 0, blockKeys)
}

// enc returns a buffer for a block's encoding (nil: one grows).
func (p *ioBufs) enc() []byte {
	if p != nil {
		if b, ok := p.encs.Get().(*[]byte); ok {
			return (*b)[:0]
		}
	}
	return nil
}

// put gives back a file's buffers (any of them nil), which the caller no
// longer uses.
func (p *ioBufs) put(bw *bufio.Writer, br *bufio.Reader, block []uint64, enc []byte) {
	if p == nil {
		return
	}
	if enc != nil {
		p.encs.Put(&enc)
	}
	if bw != nil {
		bw.Reset(nil)
		p.writers.Put(bw)
	}
	if br != nil {
		br.Reset(nil)
		p.readers.Put(br)
	}
	if cap(block) == blockKeys {
		p.blocks.Put(&block)
	}
}
