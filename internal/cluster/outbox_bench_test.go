package cluster

import (
	"context"
	"syscall"
	"testing"
)

// BenchmarkOutboxFlush measures the outbox's cost per batch in a crawl's
// pattern: at each batch delay one batch per destination and kind (four,
// for two other agents) is put, then each is read to be sent and
// acknowledged. It reports the process's CPU time per batch (cpu-ns/batch,
// from getrusage: the fsyncs' wait is not in it) and fsyncs per batch.
func BenchmarkOutboxFlush(b *testing.B) {
	o, err := OpenOutbox(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	ctx := context.Background()
	wire := make([]byte, 8<<10) // a batch of ~150 URLs at 200 ms
	dests := []string{"a2", "a3"}
	var seq uint64
	var before, after syscall.Rusage
	syncs := o.Syncs()
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for range b.N {
		var puts []OutPut
		for _, d := range dests {
			for range 2 { // two kinds
				seq++
				puts = append(puts, OutPut{Dest: d, ID: BatchID{Sender: "a1", Incarnation: 1, Seq: seq}, Wire: wire})
			}
		}
		if err := o.PutAll(ctx, puts, true); err != nil {
			b.Fatal(err)
		}
		for _, d := range dests {
			for _, e := range o.Pending(d, 8, nil) {
				if _, err := o.Read(e); err != nil {
					b.Fatal(err)
				}
				if err := o.Ack(e); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	batches := float64(4 * b.N)
	b.ReportMetric(float64(cpu)/batches, "cpu-ns/batch")
	b.ReportMetric(float64(o.Syncs()-syncs)/batches, "fsyncs/batch")
}
