package sieve

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorder is a NewFlowReceiver that keeps the committed flows and checks the
// protocol.
type recorder struct {
	t        testing.TB
	mu       sync.Mutex
	flows    [][]string
	cur      []string
	inFlow   bool
	ended    bool
	aborted  int
	failAt   int // fail the failAt-th Append (1-based) when > 0
	appends  int
	failDone error
}

func newRecorder(t testing.TB) *recorder { return &recorder{t: t} }

func (r *recorder) PrepareToAppend() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		r.t.Errorf("PrepareToAppend after NoMoreAppend")
	}
	if r.inFlow { // previous flow was aborted
		r.aborted++
	}
	r.inFlow, r.cur = true, nil
	return nil
}

func (r *recorder) Append(hash uint64, key []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.inFlow {
		r.t.Errorf("Append outside a flow")
	}
	if hash != Hash(key) {
		r.t.Errorf("Append hash %x != Hash(%q)", hash, key)
	}
	r.appends++
	if r.failAt > 0 && r.appends == r.failAt {
		return errors.New("receiver refuses")
	}
	r.cur = append(r.cur, string(key))
	return nil
}

func (r *recorder) FinishedAppending() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.inFlow {
		r.t.Errorf("FinishedAppending outside a flow")
	}
	if r.failDone != nil {
		return r.failDone
	}
	r.flows = append(r.flows, r.cur)
	r.inFlow, r.cur = false, nil
	return nil
}

func (r *recorder) NoMoreAppend() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	return nil
}

func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	for _, f := range r.flows {
		all = append(all, f...)
	}
	return all
}

// checkExactlyOnce asserts that delivered holds every key of want once.
func checkExactlyOnce(t *testing.T, delivered []string, want map[string]bool) {
	t.Helper()
	seen := make(map[string]bool, len(delivered))
	for _, k := range delivered {
		if seen[k] {
			t.Fatalf("key %q dequeued twice", k)
		}
		if !want[k] {
			t.Fatalf("key %q dequeued but never enqueued", k)
		}
		seen[k] = true
	}
	for k := range want {
		if !seen[k] {
			t.Fatalf("key %q enqueued but never dequeued (%d of %d dequeued)", k, len(seen), len(want))
		}
	}
}

// checkOrder asserts that, within each flow, keys come in the order of their
// first enqueue (first[k] is the global index of k's first enqueue).
func checkOrder(t *testing.T, flows [][]string, first map[string]int) {
	t.Helper()
	for fi, f := range flows {
		for i := 1; i < len(f); i++ {
			if first[f[i-1]] >= first[f[i]] {
				t.Fatalf("flow %d: %q (first at %d) before %q (first at %d)", fi, f[i-1], first[f[i-1]], f[i], first[f[i]])
			}
		}
	}
}

type impl struct {
	name    string
	reopens bool
	open    func(t *testing.T, dir string, r *recorder, bufKeys int) Sieve
}

var impls = []impl{
	{"drum", true, func(t *testing.T, dir string, r *recorder, n int) Sieve {
		s, err := Open(dir, r, Options{BufferKeys: n, Buckets: 4, NoSync: true, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"drum-compressed-1bucket", true, func(t *testing.T, dir string, r *recorder, n int) Sieve {
		s, err := Open(dir, r, Options{BufferKeys: n, Buckets: 1, Compressed: true, NoSync: true, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"memory", false, func(t *testing.T, dir string, r *recorder, n int) Sieve { return NewMemory(r) }},
}

func TestRandomStreams(t *testing.T) {
	for _, im := range impls {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", im.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				dir := t.TempDir()
				universe := 200 + rng.IntN(3000)
				bufKeys := 1 + rng.IntN(700)
				rec := newRecorder(t)
				s := im.open(t, dir, rec, bufKeys)
				want := map[string]bool{}
				first := map[string]int{}
				var allFlows [][]string
				var delivered []string
				n := 2000 + rng.IntN(8000)
				for i := 0; i < n; i++ {
					k := fmt.Sprintf("https://h%d.example/p/%d", rng.IntN(40), rng.IntN(universe))
					if _, err := s.Enqueue([]byte(k)); err != nil {
						t.Fatal(err)
					}
					if !want[k] {
						want[k], first[k] = true, i
					}
					switch x := rng.IntN(1000); {
					case x < 3:
						if err := s.Flush(); err != nil {
							t.Fatal(err)
						}
					case x < 5 && im.reopens:
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
						if !rec.ended {
							t.Fatal("Close did not call NoMoreAppend")
						}
						delivered = append(delivered, rec.keys()...)
						allFlows = append(allFlows, rec.flows...)
						rec = newRecorder(t)
						s = im.open(t, dir, rec, bufKeys)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Enqueue([]byte("x")); !errors.Is(err, ErrClosed) {
					t.Fatalf("Enqueue after Close: %v, want ErrClosed", err)
				}
				delivered = append(delivered, rec.keys()...)
				allFlows = append(allFlows, rec.flows...)
				checkExactlyOnce(t, delivered, want)
				checkOrder(t, allFlows, first)
				if d, ok := s.(*DRUM); ok {
					st := d.Stats()
					if st.StoredKeys != uint64(len(want)) {
						t.Fatalf("StoredKeys %d, want %d", st.StoredKeys, len(want))
					}
					if ents, _ := os.ReadDir(dir); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "aux-") }) {
						t.Fatalf("aux files left after clean close: %v", ents)
					}
					// Reopening and enqueueing everything again yields nothing.
					rec2 := newRecorder(t)
					s2 := im.open(t, dir, rec2, bufKeys)
					for k := range want {
						if _, err := s2.Enqueue([]byte(k)); err != nil {
							t.Fatal(err)
						}
					}
					if err := s2.Close(); err != nil {
						t.Fatal(err)
					}
					if got := rec2.keys(); len(got) != 0 {
						t.Fatalf("after reopen, %d old keys dequeued again, e.g. %q", len(got), got[0])
					}
				}
			})
		}
	}
}

func TestConcurrentEnqueuers(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			rec := newRecorder(t)
			s := im.open(t, t.TempDir(), rec, 500)
			const workers, perWorker = 4, 3000
			var wg sync.WaitGroup
			own := make([]map[string]bool, workers)
			for w := 0; w < workers; w++ {
				own[w] = map[string]bool{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					for i := 0; i < perWorker; i++ {
						var k string
						if rng.IntN(2) == 0 {
							k = fmt.Sprintf("shared/%d", rng.IntN(1000))
						} else {
							k = fmt.Sprintf("w%d/%06d", w, i/3) // own keys, increasing
							own[w][k] = true
						}
						if _, err := s.Enqueue([]byte(k)); err != nil {
							t.Error(err)
							return
						}
						if i%1000 == 999 {
							if err := s.Flush(); err != nil {
								t.Error(err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got := rec.keys()
			seen := map[string]bool{}
			for _, k := range got {
				if seen[k] {
					t.Fatalf("%q dequeued twice", k)
				}
				seen[k] = true
			}
			for w := 0; w < workers; w++ {
				// Own keys: all present, and in enqueue order within each flow.
				for k := range own[w] {
					if !seen[k] {
						t.Fatalf("%q never dequeued", k)
					}
				}
				for _, f := range rec.flows {
					prev := ""
					for _, k := range f {
						if strings.HasPrefix(k, fmt.Sprintf("w%d/", w)) {
							if k <= prev {
								t.Fatalf("worker %d keys out of order: %q after %q", w, k, prev)
							}
							prev = k
						}
					}
				}
			}
			var st Stats
			switch x := s.(type) {
			case *DRUM:
				st = x.Stats()
			case *Memory:
				st = x.Stats()
			}
			if st.Enqueued != workers*perWorker || st.New != uint64(len(got)) || st.New+st.Duplicates != st.Enqueued {
				t.Fatalf("stats %+v inconsistent with %d delivered", st, len(got))
			}
		})
	}
}

// TestConcurrentEnqueueSmallBuffer hammers a tiny buffer from many
// goroutines: while one caller waits to hand a full batch off, the others
// must not overfill it (a batch never exceeds BufferKeys).
func TestConcurrentEnqueueSmallBuffer(t *testing.T) {
	r := newRecorder(t)
	s, err := Open(t.TempDir(), r, Options{BufferKeys: 8, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if _, err := s.Enqueue([]byte(fmt.Sprintf("k-%d-%d", g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.New != 4000 {
		t.Fatalf("%d new keys, want 4000", st.New)
	}
}
