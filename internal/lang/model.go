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
// all little-endian. A gram's hash picks its bucket by its top bits; its
// low 16 bits are the check. A score is the language's log-probability of
// the gram above the floor, scoreFloor, in steps of 1/scoreScale.
//
//go:embed model.bin
var modelBin []byte

const (
	modelMagic  = "PLM1"
	bucketBits  = 16
	scoreFloor  = -14.0 // the log-probability of a gram a language's table lacks
	scoreScale  = 255 / -scoreFloor
	maxLanguage = 255
)

// model is the decoded table.
type model struct {
	codes   []string
	scripts []uint32 // per language, bit s set for each script s it is written in
	bucket  []uint32 // entries of bucket b: entries[bucket[b]:bucket[b+1]]
	entries []uint32
}

// loadModel decodes modelBin once.
var loadModel = sync.OnceValue(func() *model {
	m, err := decodeModel(modelBin)
	if err != nil {
		panic("lang: the embedded model: " + err.Error())
	}
	return m
})

var errModel = errors.New("not a language model")

// decodeModel decodes a model file.
func decodeModel(b []byte) (*model, error) {
	if len(b) < 8 || string(b[:4]) != modelMagic || b[6] != bucketBits {
		return nil, errModel
	}
	n := int(binary.LittleEndian.Uint16(b[4:]))
	b = b[8:]
	nb := 1<<bucketBits + 1
	if len(b) < n*7+nb*4 {
		return nil, fmt.Errorf("%w: cut short", errModel)
	}
	m := &model{codes: make([]string, n), scripts: make([]uint32, n), bucket: make([]uint32, nb)}
	for i := range n {
		m.codes[i] = string(b[:3])
		m.scripts[i] = binary.LittleEndian.Uint32(b[3:])
		b = b[7:]
	}
	for i := range m.bucket {
		m.bucket[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	b = b[4*nb:]
	if len(b)%4 != 0 || uint64(m.bucket[nb-1]) != uint64(len(b)/4) {
		return nil, fmt.Errorf("%w: %d bytes of entries for %d", errModel, len(b), m.bucket[nb-1])
	}
	m.entries = make([]uint32, len(b)/4)
	for i := range m.entries {
		m.entries[i] = binary.LittleEndian.Uint32(b[4*i:])
		if int(m.entries[i]>>8&0xff) >= n {
			return nil, fmt.Errorf("%w: entry of language %d", errModel, m.entries[i]>>8&0xff)
		}
	}
	return m, nil
}

// detect returns the language of chunk: "" when its letters are in no
// script of the model's languages. The script of most of its letters picks
// the languages compared; where one language has it, that one is returned
// without counting grams; else the one whose grams score most.
func (m *model) detect(chunk string) string {
	sc := mainScript(chunk)
	bit := uint32(1) << sc
	cand, only := 0, -1
	for l, s := range m.scripts {
		if s&bit != 0 {
			cand++
			only = l
		}
	}
	switch {
	case sc == scriptNone || cand == 0:
		return ""
	case cand == 1:
		return m.codes[only]
	}
	var score [maxLanguage + 1]int32
	grams(chunk, func(h uint32, _ int) {
		b := h >> (32 - bucketBits)
		check := h & 0xffff
		for _, e := range m.entries[m.bucket[b]:m.bucket[b+1]] {
			if e>>16 == check {
				score[e>>8&0xff] += int32(e & 0xff)
			}
		}
	})
	best := -1
	for l, s := range m.scripts {
		if s&bit != 0 && (best < 0 || score[l] > score[best]) {
			best = l
		}
	}
	return m.codes[best]
}

// knows returns the languages of the model.
func (m *model) knows() map[string]bool {
	k := map[string]bool{}
	for _, c := range m.codes {
		k[c] = true
	}
	return k
}
