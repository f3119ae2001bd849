package parse

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
			t[i] = 0xff // a NUL is text, not a separator; any non-zero class works
		default:
			t[i] = c
		}
	}
	return t
}()

// feedText feeds the bytes of a text token to the digest and the SimHash
// in one pass: the loop the parser spends most of its time in. It does what
// digester.text followed by simhasher.text would do.
func feedText(d *digester, s *simhasher, t []byte) {
	buf, pending, inText := d.buf, d.pending, d.inText
	wh, inWord := s.wh, s.inWord
	for _, c := range t {
		l := textByte[c]
		if l == 0 {
			pending = true
			if inWord {
				s.wh, s.inWord = wh, true
				s.endWord()
				wh, inWord = s.wh, false
			}
			continue
		}
		if l == 0xff && c == 0 {
			l = 0
		}
		wh = (wh ^ uint64(l)) * fnvPrime
		inWord = true
		if len(buf)+2 > cap(buf) {
			d.buf = buf
			d.flush()
			buf = d.buf
		}
		if pending && inText {
			buf = append(buf, ' ')
		}
		pending, inText = false, true
		buf = append(buf, c)
	}
	d.buf, d.pending, d.inText = buf, pending, inText
	s.wh, s.inWord = wh, inWord
}
