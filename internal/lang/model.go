package lang

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// The model (model.bin, written by gen/) is a table of character n-gram
// scores of each language, hashed:
//
//	"PLM1", uint16 languages, uint8 bucket bits, uint8 0
//	per language: its code (3 bytes), the scripts it is written in (uint32, bit per script)
//	uint32 × (buckets+1): where each bucket's entries start
//	uint32 × entries: the gram's check (16 bits) | language (8) | score (8)
//
// all little-endian, entries sorted by the gram's hash, then language. A
// gram's hash picks its bucket by its top 16 bits; its low 16 bits are the
// check, so a bucket and a check give back the whole hash. A score is the
// language's log-probability of the gram above the floor, scoreFloor, in
// steps of 1/scoreScale.
//
// The file is the model as stored; Detect scores with tables built from it
// once (table.go).
//
//go:embed model.bin
var modelBin []byte

const (
	modelMagic  = "PLM1"
	bucketBits  = 16    // so that a bucket and a check are the 32 bits of a hash
	scoreFloor  = -14.0 // the log-probability of a gram a language's table lacks
	scoreScale  = 255 / -scoreFloor
	maxLanguage = 255
)

// modelFile is a model file decoded.
type modelFile struct {
	codes   []string
	scripts []uint32 // per language, bit s set for each script s it is written in
	bucket  []uint32 // entries of bucket b: entries[bucket[b]:bucket[b+1]]
	entries []uint32
}

// each calls fn with every entry of f: the gram's hash, the language and
// its score, in the order of the file (by hash, then language).
func (f *modelFile) each(fn func(h uint32, l, score uint8)) {
	for b := range 1 << bucketBits {
		for _, e := range f.entries[f.bucket[b]:f.bucket[b+1]] {
			fn(uint32(b)<<16|e>>16, uint8(e>>8), uint8(e))
		}
	}
}

// model is the model as Detect uses it: the languages, and for each
// script the languages written in it and, where there are several, the
// table that tells them apart.
type model struct {
	codes   []string
	scripts []uint32
	langs   [numScripts][]uint8 // the languages written in each script, in order
	tables  [numScripts]*table  // for the scripts of two languages or more
}

// loadModel decodes modelBin and builds its tables, once.
var loadModel = sync.OnceValue(func() *model {
	f, err := decodeModel(modelBin)
	if err != nil {
		panic("lang: the embedded model: " + err.Error())
	}
	return newModel(f)
})

// newModel builds the tables of f.
func newModel(f *modelFile) *model {
	m := &model{codes: f.codes, scripts: f.scripts}
	for sc := range numScripts {
		if sc == scriptNone {
			continue
		}
		for l, s := range f.scripts {
			if s&(1<<sc) != 0 {
				m.langs[sc] = append(m.langs[sc], uint8(l))
			}
		}
		if len(m.langs[sc]) > 1 {
			m.tables[sc] = newTable(f, m.langs[sc])
		}
	}
	return m
}

var errModel = errors.New("not a language model")

// decodeModel decodes a model file.
func decodeModel(b []byte) (*modelFile, error) {
	if len(b) < 8 || string(b[:4]) != modelMagic || b[6] != bucketBits {
		return nil, errModel
	}
	n := int(binary.LittleEndian.Uint16(b[4:]))
	b = b[8:]
	nb := 1<<bucketBits + 1
	if len(b) < n*7+nb*4 {
		return nil, fmt.Errorf("%w: cut short", errModel)
	}
	f := &modelFile{codes: make([]string, n), scripts: make([]uint32, n), bucket: make([]uint32, nb)}
	for i := range n {
		f.codes[i] = string(b[:3])
		f.scripts[i] = binary.LittleEndian.Uint32(b[3:])
		b = b[7:]
	}
	for i := range f.bucket {
		f.bucket[i] = binary.LittleEndian.Uint32(b[4*i:])
		if i > 0 && f.bucket[i] < f.bucket[i-1] {
			return nil, fmt.Errorf("%w: bucket %d starts before the one before it", errModel, i)
		}
	}
	b = b[4*nb:]
	if len(b)%4 != 0 || uint64(f.bucket[nb-1]) != uint64(len(b)/4) {
		return nil, fmt.Errorf("%w: %d bytes of entries for %d", errModel, len(b), f.bucket[nb-1])
	}
	f.entries = make([]uint32, len(b)/4)
	for i := range f.entries {
		f.entries[i] = binary.LittleEndian.Uint32(b[4*i:])
		if int(f.entries[i]>>8&0xff) >= n {
			return nil, fmt.Errorf("%w: entry of language %d", errModel, f.entries[i]>>8&0xff)
		}
	}
	return f, nil
}

// detect returns the language of chunk: "" when its letters are in no
// script of the model's languages. The script of most of its letters picks
// the languages compared: where one language has it, that one is returned
// without counting grams; else the one whose grams score most.
func (m *model) detect(chunk string) string {
	sc := mainScript(chunk)
	switch langs := m.langs[sc]; len(langs) {
	case 0:
		return ""
	case 1:
		return m.codes[langs[0]]
	}
	return m.codes[m.tables[sc].best(chunk)]
}

// knows returns the languages of the model.
func (m *model) knows() map[string]bool {
	k := map[string]bool{}
	for _, c := range m.codes {
		k[c] = true
	}
	return k
}
