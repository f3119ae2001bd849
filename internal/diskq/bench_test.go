package diskq

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

const benchRecord = 60

func benchOpts() Options {
	o := DefaultOptions()
	o.Sync = false // measure the queue, not the disk's fsync latency
	o.Logger = testOpts(0).Logger
	return o
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkQueuePush pushes one 60-byte record again and again.
func BenchmarkQueuePush(b *testing.B) {
	r := rec(1, benchRecord)
	benchPush(b, func(int) []byte { return r })
}

// BenchmarkQueuePop pops one 60-byte record pushed again and again.
func BenchmarkQueuePop(b *testing.B) {
	r := rec(1, benchRecord)
	benchPop(b, func(int) []byte { return r })
}

// BenchmarkQueuePushURLs pushes ready-queue-shaped records and reports
// their mean size and the disk bytes per record.
func BenchmarkQueuePushURLs(b *testing.B) {
	recs := urlRecords(1 << 16)
	benchPush(b, func(i int) []byte { return recs[i&(1<<16-1)] })
}

// BenchmarkQueuePopURLs pops ready-queue-shaped records.
func BenchmarkQueuePopURLs(b *testing.B) {
	recs := urlRecords(1 << 16)
	benchPop(b, func(i int) []byte { return recs[i&(1<<16-1)] })
}

func benchPush(b *testing.B, record func(i int) []byte) {
	q, err := Open(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	var raw int64
	b.ResetTimer()
	for i := range b.N {
		r := record(i)
		raw += int64(len(r))
		if err := q.Push(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportRate(b)
	b.ReportMetric(float64(raw)/float64(b.N), "rec-B")
	b.ReportMetric(float64(q.Bytes())/float64(b.N), "disk-B/rec")
}

func benchPop(b *testing.B, record func(i int) []byte) {
	q, err := Open(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	for i := range b.N {
		if err := q.Push(record(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	b.ResetTimer()
	for range b.N {
		var ok bool
		if buf, ok, err = q.Pop(buf); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	reportRate(b)
}

const benchIDs = 100_000

// BenchmarkQueuesEnqueue enqueues 60-byte records to 10^5 ids in random
// order and reports the RAM and disk cost per virtualized record.
func BenchmarkQueuesEnqueue(b *testing.B) {
	m, err := OpenQueues(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	r := rec(1, benchRecord)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.SetBytes(benchRecord)
	b.ResetTimer()
	x := uint64(1)
	for range b.N {
		x = x*6364136223846793005 + 1442695040888963407
		if err := m.Enqueue((x>>33)%benchIDs, r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRate(b)
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(m.Total())
	b.ReportMetric(float64(m.IndexBytes())/n, "index-B/rec")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/rec")
	b.ReportMetric(float64(m.DiskBytes())/n, "disk-B/rec")
	b.ReportMetric(float64(m.Len()), "ids")
}

// BenchmarkQueuesDequeueN drains 10^5 ids filled in random order, a few
// records of one id per call, as the virtualizer refills a visit state.
func BenchmarkQueuesDequeueN(b *testing.B) {
	m, err := OpenQueues(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	r := rec(1, benchRecord)
	x := uint64(1)
	for range b.N {
		x = x*6364136223846793005 + 1442695040888963407
		if err := m.Enqueue((x>>33)%benchIDs, r); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.Sync(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchRecord)
	b.ResetTimer()
	done := 0
	for id := uint64(0); done < b.N; id = (id + 1) % benchIDs {
		got, err := m.DequeueN(id, 16)
		if err != nil {
			b.Fatal(err)
		}
		done += len(got)
	}
	b.StopTimer()
	reportRate(b)
	b.ReportMetric(float64(m.DiskBytes()), "disk-B-left")
}

// BenchmarkQueuesDequeueBursty drains ids that were filled in bursts (the
// virtualizer moves a visit state's tail to disk in one go), where DequeueN
// reads each burst with one sequential read.
func BenchmarkQueuesDequeueBursty(b *testing.B) {
	m, err := OpenQueues(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	r := rec(1, benchRecord)
	const burst = 64
	ids := uint64(b.N/burst + 1)
	for i := range b.N {
		if err := m.Enqueue(uint64(i/burst)%ids, r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(benchRecord)
	b.ResetTimer()
	for id := range ids {
		if _, err := m.DequeueN(id, burst); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRate(b)
}

// urlRecords returns n records shaped like the ready queue's, in the
// order a crawl discovers them: 21 bytes of metadata (the page they were
// found on, a depth), then the new links of one page of the generated web
// after another (the web of bench scale; URLs of mean 73 bytes).
func urlRecords(n int) [][]byte {
	g, err := testweb.NewGen(testweb.GenConfig{Seed: 1})
	if err != nil {
		panic(err)
	}
	seen := make(map[string]bool, n)
	out := make([][]byte, 0, n)
	x := uint64(88172645463325252)
	next := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	for len(out) < n {
		h := int(next() % uint64(g.Config().Hosts))
		p := int(next() % uint64(g.Pages(h)))
		via, depth := next(), byte(next()%8)
		for _, l := range g.Links(h, p) {
			if seen[l] {
				continue
			}
			seen[l] = true
			b := make([]byte, 0, 21+len(l))
			b = append(b, 1, 0, depth, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 1)
			b = binary.BigEndian.AppendUint64(b, via)
			out = append(out, append(b, l...))
		}
	}
	return out[:n]
}
