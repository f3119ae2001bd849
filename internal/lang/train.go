package lang

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// TrainOptions configure WriteModel.
type TrainOptions struct {
	// Locale is the directory of translations: <locale>/LC_MESSAGES/*.mo.
	Locale string
	// MinBytes is the training text a language needs to be in the model.
	MinBytes int
	// Grams is how many grams of each language the model keeps, its most
	// frequent.
	Grams int
}

// WriteModel trains the model on the half of the translations under
// o.Locale that the benchmark does not measure on (heldOut) and writes it
// to w in model.bin's format. It returns the languages in the model.
func WriteModel(o TrainOptions, w io.Writer) ([]string, error) {
	if o.MinBytes <= 0 {
		o.MinBytes = 5000
	}
	if o.Grams <= 0 {
		o.Grams = 3000
	}
	c, err := readCorpus(o.Locale)
	if err != nil {
		return nil, err
	}
	return writeModel(c.train, o, w)
}

// writeModel trains the model on train (language code → messages) and
// writes it to w.
func writeModel(train map[string]map[string]bool, o TrainOptions, w io.Writer) ([]string, error) {
	var codes []string
	texts := map[string]string{}
	for code, set := range train {
		msgs := make([]string, 0, len(set))
		for m := range set {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		if t := strings.Join(msgs, "\n"); len(t) >= o.MinBytes {
			texts[code] = t
			codes = append(codes, code)
		}
	}
	sort.Strings(codes)
	if len(codes) > maxLanguage+1 {
		return nil, fmt.Errorf("lang: %d languages, at most %d", len(codes), maxLanguage+1)
	}
	var entries []gramEntry
	scripts := make([]uint32, len(codes))
	for l, code := range codes {
		scripts[l] = scriptsOf(texts[code])
		entries = append(entries, languageEntries(texts[code], uint8(l), o.Grams)...)
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		return a.hash < b.hash || a.hash == b.hash && a.lang < b.lang
	})
	bw := bufio.NewWriter(w)
	head := []byte(modelMagic + "\x00\x00\x00\x00")
	binary.LittleEndian.PutUint16(head[4:], uint16(len(codes)))
	head[6] = bucketBits
	bw.Write(head)
	for l, code := range codes {
		bw.WriteString(code)
		bw.Write(binary.LittleEndian.AppendUint32(nil, scripts[l]))
	}
	i := 0 // entries are sorted by hash, whose top bits are the bucket
	for b := range 1<<bucketBits + 1 {
		for i < len(entries) && int(entries[i].hash>>(32-bucketBits)) < b {
			i++
		}
		bw.Write(binary.LittleEndian.AppendUint32(nil, uint32(i)))
	}
	for _, e := range entries {
		bw.Write(binary.LittleEndian.AppendUint32(nil, e.hash&0xffff<<16|uint32(e.lang)<<8|uint32(e.score)))
	}
	return codes, bw.Flush()
}

// gramEntry is a gram of a language and its score, before it is packed.
type gramEntry struct {
	hash        uint32
	lang, score uint8
}

// scriptsOf returns the scripts of at least a tenth of the letters of
// text, a bit for each.
func scriptsOf(text string) uint32 {
	var counts [numScripts]int
	scriptCounts(text, &counts)
	total := 0
	for _, n := range counts {
		total += n
	}
	var bits uint32
	for s, n := range counts {
		if s != int(scriptNone) && n*10 >= total {
			bits |= 1 << s
		}
	}
	return bits
}

// languageEntries returns the entries of language l: its n most frequent
// grams in text with a score above 0, each scored by its log-probability
// among the grams of its order, above scoreFloor.
func languageEntries(text string, l uint8, n int) []gramEntry {
	counts := map[uint32]int{}
	order := map[uint32]int{}
	var total [maxOrder + 1]int
	grams(text, func(h uint32, k int) bool {
		counts[h]++
		order[h] = k
		total[k]++
		return true
	})
	hashes := make([]uint32, 0, len(counts))
	for h := range counts {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(i, j int) bool {
		a, b := hashes[i], hashes[j]
		return counts[a] > counts[b] || counts[a] == counts[b] && a < b
	})
	var out []gramEntry
	for _, h := range hashes {
		if len(out) == n {
			break
		}
		lp := math.Log(float64(counts[h]) / float64(total[order[h]]))
		if s := math.Round((lp - scoreFloor) * scoreScale); s >= 1 {
			out = append(out, gramEntry{hash: h, lang: l, score: uint8(min(s, 255))})
		}
	}
	return out
}
