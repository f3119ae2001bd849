package parse

import "math/bits"

// textByte classifies every byte once for the text feeds: separators
// (white space and digits, which the digest turns into a space and which
// end a SimHash word) map to 0, other bytes to themselves lower-cased
// (ASCII) for the SimHash words.
var textByte = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		switch {
		case isSpace(c) || c >= '0' && c <= '9':
			t[i] = 0
		case 'A' <= c && c <= 'Z':
			t[i] = c + 'a' - 'A'
		case c == 0:
			t[i] = 0xff // a NUL is text, not a separator; it hashes as 0xff does
		default:
			t[i] = c
		}
	}
	return t
}()

// feedTextChunk bounds the bytes feedText handles between two checks of
// the digest buffer's room: a chunk writes at most one byte more than it
// reads (a folded space before its first text byte).
const feedTextChunk = 1024

// feedText feeds the bytes of a text token to the digest and the SimHash
// in one pass: the loop the parser spends most of its time in. It does what
// digester.text followed by simhasher.text would do. It alternates two
// tight loops, one over a run of separators and one over a word, so that
// the byte loops test one condition each.
func feedText(d *digester, s *simhasher, t []byte) {
	pending, inText := d.pending, d.inText
	wh, inWord := s.wh, s.inWord
	for len(t) > 0 {
		chunk := t[:min(len(t), feedTextChunk)]
		t = t[len(chunk):]
		if cap(d.buf)-len(d.buf) < len(chunk)+1 {
			d.flush()
		}
		buf := d.buf[:cap(d.buf)]
		n := len(d.buf)
		for i := 0; i < len(chunk); {
			if textByte[chunk[i]] == 0 {
				// A run of separators: it ends the word being read.
				pending = true
				if inWord {
					s.addWord(wh)
					wh, inWord = 0, false
				}
				for i++; i < len(chunk) && textByte[chunk[i]] == 0; i++ {
				}
				continue
			}
			// A run of word bytes (it may continue in the next chunk or token).
			if pending && inText {
				buf[n] = ' '
				n++
			}
			pending, inText, inWord = false, true, true
			for ; i < len(chunk); i++ {
				c := chunk[i]
				l := textByte[c]
				if l == 0 {
					break
				}
				wh = bits.RotateLeft64(wh, wordRotate) ^ uint64(l)
				buf[n] = c
				n++
			}
		}
		d.buf = buf[:n]
	}
	d.pending, d.inText = pending, inText
	s.wh, s.inWord = wh, inWord
}
