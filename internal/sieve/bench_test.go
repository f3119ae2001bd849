package sieve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunBenchSmall(t *testing.T) {
	var js, table bytes.Buffer
	err := RunBench(context.Background(), BenchOptions{Keys: 20000, DupRatio: 0.5, Dir: t.TempDir(),
		Baselines: strings.Split(BenchBaselines, ","), BufferKeys: 4096, NoSync: true}, &js, &table)
	if err != nil {
		t.Fatal(err)
	}
	var rep BenchReport
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1+len(strings.Split(BenchBaselines, ",")) {
		t.Fatalf("%d results", len(rep.Results))
	}
	d := rep.Results[0].Distinct
	for _, r := range rep.Results {
		if r.Keys != 20000 || r.Distinct != d || r.KeysPerSec <= 0 {
			t.Fatalf("%s: %+v (petrel distinct %d)", r.Name, r, d)
		}
	}
	if d < 9000 || d > 11000 {
		t.Fatalf("distinct %d, want about half of 20000", d)
	}
	if rep.KeyBytes < 50 || rep.KeyBytes > 75 {
		t.Fatalf("mean key %.1f bytes", rep.KeyBytes)
	}
	if table.Len() == 0 {
		t.Fatal("no table")
	}
}

// TestBenchSieveCLI runs the full benchmark when PETREL_SIEVE_BENCH_KEYS is
// set, e.g.
//
//	PETREL_SIEVE_BENCH_KEYS=10000000 PETREL_SIEVE_BENCH_DUP=0.5 go test -run TestBenchSieveCLI -v -timeout 0 ./internal/sieve
func TestBenchSieveCLI(t *testing.T) {
	keys, _ := strconv.Atoi(os.Getenv("PETREL_SIEVE_BENCH_KEYS"))
	if keys == 0 {
		t.Skip("set PETREL_SIEVE_BENCH_KEYS to run")
	}
	dup, _ := strconv.ParseFloat(os.Getenv("PETREL_SIEVE_BENCH_DUP"), 64)
	buf, _ := strconv.Atoi(os.Getenv("PETREL_SIEVE_BENCH_BUFFER"))
	timeout, _ := time.ParseDuration(os.Getenv("PETREL_SIEVE_BENCH_BASELINE_TIMEOUT"))
	opts := BenchOptions{Keys: keys, DupRatio: dup, Dir: os.Getenv("PETREL_SIEVE_BENCH_DIR"),
		Baselines: strings.Split(BenchBaselines, ","), BufferKeys: buf, BaselineTimeout: timeout,
		Compressed: os.Getenv("PETREL_SIEVE_BENCH_COMPRESSED") != "", NoSync: os.Getenv("PETREL_SIEVE_BENCH_NOSYNC") != ""}
	if b := os.Getenv("PETREL_SIEVE_BENCH_BASELINES"); b != "" {
		opts.Baselines = nil
		if b != "none" {
			json.Unmarshal([]byte(b), &opts.Baselines)
		}
	}
	if err := RunBench(context.Background(), opts, os.Stdout, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDRUMEnqueue measures enqueueing, flushes included, with hashes
// grouped by host (as the frontier opens its sieve) or not.
func BenchmarkDRUMEnqueue(b *testing.B) {
	for _, c := range []struct{ compressed, grouped bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		compressed := c.compressed
		b.Run(fmt.Sprintf("compressed=%v/grouped=%v", compressed, c.grouped), func(b *testing.B) {
			opts := Options{BufferKeys: 1 << 18, Compressed: compressed, NoSync: true, Logger: quietLogger()}
			if c.grouped {
				opts.GroupHash = hostGroup
			}
			s, err := Open(b.TempDir(), &countRecv{}, opts)
			if err != nil {
				b.Fatal(err)
			}
			g := newKeyStream(0.5)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Enqueue(g.next()); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			st := s.Stats()
			if st.Flushes > 0 {
				b.ReportMetric(float64(st.TotalFlush.Nanoseconds())/float64(st.Enqueued), "flush-ns/key")
			}
		})
	}
}

func BenchmarkMemoryEnqueue(b *testing.B) {
	s := NewMemory(&countRecv{})
	g := newKeyStream(0.5)
	for i := 0; i < b.N; i++ {
		if _, err := s.Enqueue(g.next()); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
}

func BenchmarkURLCacheSeen(b *testing.B) {
	c := NewURLCache(1 << 20)
	b.RunParallel(func(pb *testing.PB) {
		var x uint64
		for pb.Next() {
			c.Seen(splitmix(&x) % 100000)
		}
	})
}

func BenchmarkHash(b *testing.B) {
	key := appendKey(nil, 123456789)
	b.SetBytes(int64(len(key)))
	for i := 0; i < b.N; i++ {
		Hash(key)
	}
}

func BenchmarkSortPairs(b *testing.B) {
	const n = 1 << 20
	ps := make([]pair, n)
	var x uint64
	for i := 0; i < b.N; i++ {
		for j := range ps {
			ps[j] = pair{h: splitmix(&x), i: uint32(j)}
		}
		sortPairs(ps)
	}
}

// BenchmarkDRUMSmallFlush measures a flush of a few keys into a store of
// 10^5, the crawl's frequent flush when its workbench runs short: its
// cost is set by the store's size and the files' buffers, not the keys.
func BenchmarkDRUMSmallFlush(b *testing.B) {
	s, err := Open(b.TempDir(), &countRecv{}, Options{Compressed: true, NoSync: true, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := newKeyStream(0.5)
	for range 100_000 {
		if _, err := s.Enqueue(g.next()); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for range 100 {
			if _, err := s.Enqueue(g.next()); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
