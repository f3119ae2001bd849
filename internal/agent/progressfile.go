package agent

import (
	"path/filepath"
	"runtime/metrics"
	"time"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// progressFile is written into state/ with every progress line: the
// counters of the moment with a few figures that are not counters, for
// benchmarks and monitors that read a running crawl from outside. It is
// replaced atomically (not fsynced: it describes the moment, a crash loses
// nothing by losing it). Its extra keys:
//
//	UnixNano            when it was written
//	GoHeapBytes         bytes of live and unswept heap objects
//	GoTotalBytes        all memory the Go runtime has mapped, less what it released
//	SieveFlushCount     the sieve's completed flushes
//	SieveFlushNano      sum of their durations
//	SieveFlushMaxNano   the longest one
//	SieveLastFlushNano  the last one
//	SieveStoredKeys     distinct hashes in the sieve's store
//	SieveStoreBytes     bytes of the store files
//	SieveRAMBytes       bytes of RAM the sieve holds for buffers and I/O
const progressFile = "progress.json"

// memSamples are the runtime figures read for the progress file (reading
// them does not stop the world, unlike runtime.ReadMemStats).
var memSampleNames = [...]string{"/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes", "/memory/classes/heap/released:bytes"}

// writeProgressFile writes the progress file for the snapshot cur.
func (a *Agent) writeProgressFile(cur stats.Snapshot, now time.Time) {
	snap := make(stats.Snapshot, len(cur)+12)
	for k, v := range cur {
		snap[k] = v
	}
	snap["UnixNano"] = now.UnixNano()
	samples := make([]metrics.Sample, len(memSampleNames))
	for i, n := range memSampleNames {
		samples[i].Name = n
	}
	metrics.Read(samples)
	val := func(i int) int64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return int64(samples[i].Value.Uint64())
		}
		return 0
	}
	snap["GoHeapBytes"] = val(0)
	snap["GoTotalBytes"] = val(1) - val(2)
	if a.sieve != nil {
		st := a.sieve.Stats()
		snap["SieveFlushCount"] = int64(st.Flushes)
		snap["SieveFlushNano"] = int64(st.TotalFlush)
		snap["SieveFlushMaxNano"] = int64(st.MaxFlush)
		snap["SieveLastFlushNano"] = int64(st.LastFlush)
		snap["SieveStoredKeys"] = int64(st.StoredKeys)
		snap["SieveStoreBytes"] = st.StoreBytes
		snap["SieveRAMBytes"] = st.RAMBytes
	}
	path := filepath.Join(a.cfg.Dir, "state", progressFile)
	if err := atomicfile.Write(path, atomicfile.Options{}, snap.WriteJSON); err != nil && a.log != nil {
		a.log.Warn("progress file", "err", err)
	}
}
