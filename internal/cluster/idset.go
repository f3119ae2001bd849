package cluster

import (
	"encoding/json"
	"sync"
)

// idSet remembers batch ids. Each sender numbers its batches to one
// receiver 1, 2, 3… within an incarnation, so a stream is kept as a
// watermark (every sequence number up to it is in the set) and the few
// numbers above it that arrived out of order: memory per stream stays
// small however long the crawl.
type idSet struct {
	mu      sync.Mutex
	streams map[streamKey]*stream
}

type streamKey struct {
	Sender      string
	Incarnation uint64
}

type stream struct {
	Low   uint64              `json:"low"`
	Above map[uint64]struct{} `json:"-"`
}

func newIDSet() *idSet { return &idSet{streams: map[streamKey]*stream{}} }

func (s *idSet) has(id BatchID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[streamKey{id.Sender, id.Incarnation}]
	if st == nil {
		return false
	}
	if id.Seq <= st.Low {
		return true
	}
	_, ok := st.Above[id.Seq]
	return ok
}

// add inserts id and reports whether it was new.
func (s *idSet) add(id BatchID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := streamKey{id.Sender, id.Incarnation}
	st := s.streams[k]
	if st == nil {
		st = &stream{Above: map[uint64]struct{}{}}
		s.streams[k] = st
	}
	if id.Seq <= st.Low {
		return false
	}
	if _, ok := st.Above[id.Seq]; ok {
		return false
	}
	st.Above[id.Seq] = struct{}{}
	for {
		if _, ok := st.Above[st.Low+1]; !ok {
			break
		}
		delete(st.Above, st.Low+1)
		st.Low++
	}
	return true
}

// idSetJSON is the saved form: per stream the watermark and the numbers
// above it.
type idSetJSON struct {
	Sender      string   `json:"sender"`
	Incarnation uint64   `json:"incarnation"`
	Low         uint64   `json:"low"`
	Above       []uint64 `json:"above,omitempty"`
}

func (s *idSet) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]idSetJSON, 0, len(s.streams))
	for k, st := range s.streams {
		e := idSetJSON{Sender: k.Sender, Incarnation: k.Incarnation, Low: st.Low}
		for q := range st.Above {
			e.Above = append(e.Above, q)
		}
		out = append(out, e)
	}
	return json.Marshal(out)
}

func (s *idSet) UnmarshalJSON(b []byte) error {
	var in []idSetJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams = map[streamKey]*stream{}
	for _, e := range in {
		st := &stream{Low: e.Low, Above: map[uint64]struct{}{}}
		for _, q := range e.Above {
			st.Above[q] = struct{}{}
		}
		s.streams[streamKey{e.Sender, e.Incarnation}] = st
	}
	return nil
}

// clone copies the set.
func (s *idSet) clone() *idSet {
	b, _ := s.MarshalJSON()
	c := newIDSet()
	c.UnmarshalJSON(b)
	return c
}
