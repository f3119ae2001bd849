package diskq

import (
	"runtime"
	"testing"
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

func BenchmarkQueuePush(b *testing.B) {
	q, err := Open(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	r := rec(1, benchRecord)
	b.SetBytes(benchRecord)
	b.ResetTimer()
	for range b.N {
		if err := q.Push(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		b.Fatal(err)
	}
	reportRate(b)
}

func BenchmarkQueuePop(b *testing.B) {
	q, err := Open(b.TempDir(), benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	r := rec(1, benchRecord)
	for range b.N {
		if err := q.Push(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	b.SetBytes(benchRecord)
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
