package benchscale

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/petrel-crawler/petrel/internal/benchcrawl"
	"github.com/petrel-crawler/petrel/internal/bloom"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// DiskBytes are the bytes a crawl directory holds on disk (allocated
// blocks), by component. A file hard-linked from several places (a
// checkpoint's sieve files) counts once, in the first component below.
type DiskBytes struct {
	SieveStore   int64 `json:"sieve_store"`   // state/sieve/*.sv: the sorted hashes
	SieveBuffers int64 `json:"sieve_buffers"` // the rest of state/sieve: auxiliary files of the buffered keys, manifest
	Ready        int64 `json:"ready_queue"`   // state/ready
	Virtualizer  int64 `json:"virtualizer"`   // state/virtual
	WARC         int64 `json:"warc"`
	Checkpoints  int64 `json:"checkpoints"` // what state/checkpoints adds to the above
	Other        int64 `json:"other"`       // logs, digest filters, per-key counts, ...
}

// Total returns the sum of the components.
func (d DiskBytes) Total() int64 {
	return d.SieveStore + d.SieveBuffers + d.Ready + d.Virtualizer + d.WARC + d.Checkpoints + d.Other
}

// Frontier returns the bytes of the URLs the crawl knows and has queued:
// sieve, ready queue and virtualizer.
func (d DiskBytes) Frontier() int64 { return d.SieveStore + d.SieveBuffers + d.Ready + d.Virtualizer }

// diskUsage measures the crawl directory dir.
func diskUsage(dir string) DiskBytes {
	var d DiskBytes
	seen := map[[2]uint64]bool{}
	add := func(root string, to func(path string) *int64) {
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return nil
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok {
				return nil
			}
			id := [2]uint64{uint64(st.Dev), st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
			*to(p) += st.Blocks * 512
			return nil
		})
	}
	state := filepath.Join(dir, "state")
	add(filepath.Join(state, "sieve"), func(p string) *int64 {
		if strings.HasSuffix(p, ".sv") {
			return &d.SieveStore
		}
		return &d.SieveBuffers
	})
	add(filepath.Join(state, "ready"), func(string) *int64 { return &d.Ready })
	add(filepath.Join(state, "virtual"), func(string) *int64 { return &d.Virtualizer })
	add(filepath.Join(dir, "warc"), func(string) *int64 { return &d.WARC })
	add(filepath.Join(state, "checkpoints"), func(string) *int64 { return &d.Checkpoints })
	add(dir, func(string) *int64 { return &d.Other })
	return d
}

// readProgress reads the agent's state/progress.json.
func readProgress(crawlDir string) (map[string]int64, error) {
	b, err := os.ReadFile(filepath.Join(crawlDir, "state", "progress.json"))
	if err != nil {
		return nil, err
	}
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("benchscale: progress.json: %w", err)
	}
	return m, nil
}

// procMem returns the resident set size and its peak (VmRSS, VmHWM) of a
// process, in bytes.
func procMem(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	return parseProcStatus(string(b))
}

// parseProcStatus extracts VmRSS and VmHWM from /proc/PID/status text.
func parseProcStatus(s string) (rss, peak int64, err error) {
	found := 0
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != "VmRSS:" && f[0] != "VmHWM:") {
			continue
		}
		kb, perr := strconv.ParseInt(f[1], 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("benchscale: /proc status %s: %w", f[0], perr)
		}
		if f[0] == "VmRSS:" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
		found++
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("benchscale: /proc status: no VmRSS/VmHWM")
	}
	return rss, peak, nil
}

// sampler takes the samples of one crawl process.
type sampler struct {
	crawlDir string
	start    time.Time
	webPID   int
	webCPU0  time.Duration
	prev     *Sample
	peakRSS  int64
}

// take samples the crawl process pid; it fails only when the process is
// gone.
func (s *sampler) take(pid int, now time.Time) (Sample, error) {
	rss, peak, err := procMem(pid)
	if err != nil {
		return Sample{}, err
	}
	cpu, err := benchcrawl.ProcCPU(pid)
	if err != nil {
		return Sample{}, err
	}
	s.peakRSS = max(s.peakRSS, peak)
	sm := Sample{T: now.Sub(s.start).Seconds(), RSS: rss, CPU: cpu.Seconds()}
	if wc, err := benchcrawl.ProcCPU(s.webPID); err == nil {
		sm.WebCPU = (wc - s.webCPU0).Seconds()
	}
	if m, err := readProgress(s.crawlDir); err == nil {
		sm.fromProgress(m)
	}
	sm.DiskBy = diskUsage(s.crawlDir)
	sm.Disk = sm.DiskBy.Total()
	if p := s.prev; p != nil && sm.T > p.T {
		sm.PagesPerS = float64(sm.Pages-p.Pages) / (sm.T - p.T)
		if sm.Pages > p.Pages {
			sm.CPUPer1000 = (sm.CPU - p.CPU) / float64(sm.Pages-p.Pages) * 1000
		}
	}
	s.prev = &sm
	return sm, nil
}

// fromProgress copies the agent's figures.
func (sm *Sample) fromProgress(m map[string]int64) {
	sec := func(k string) float64 { return float64(m[k]) / 1e9 }
	sm.Pages = m["Fetched"]
	sm.Known = m["SieveNew"]
	sm.Ready = m["Ready"]
	sm.Virtualized = m["Virtualized"]
	sm.QueuedRAM = m["Queued"] - m["Virtualized"]
	sm.QueuedDisk = m["Virtualized"] + m["Ready"]
	sm.Heap = m["GoHeapBytes"]
	sm.VisitStates = m["VisitStates"]
	sm.SieveFlushes = m["SieveFlushCount"]
	sm.SieveFlushS = sec("SieveFlushNano")
	sm.SieveFlushMaxS = sec("SieveFlushMaxNano")
	sm.SieveLastFlushS = sec("SieveLastFlushNano")
	sm.Checkpoints = m["Checkpoints"]
	sm.CheckpointPauseS = sec("CheckpointPauseNano")
	sm.FetcherWaitS = sec("FetcherWaitNano")
	sm.Robots = m["RobotsFetched"]
	sm.OverBudget = m["OverBudget"]
	sm.Errors = m["FetchErrors"] + m["Status5xx"] + m["StoreErrors"]
}

// readCounts reads the per-key URL counts the agent saves (state/counts,
// frontier.ReadCounts) and returns the number of keys and the largest
// count.
func readCounts(path string) (keys, largest int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	noKey := func([]byte) uint64 { return 0 }
	err = frontier.ReadCounts(bufio.NewReaderSize(f, 1<<20), noKey, func(_ uint64, n int64) {
		keys++
		largest = max(largest, n)
	})
	if err != nil {
		return keys, largest, fmt.Errorf("benchscale: counts file: %w", err)
	}
	return keys, largest, nil
}

// FilterFigures describe a digest filter file the agent saved at its stop.
type FilterFigures struct {
	Keys      uint64  `json:"keys"`
	Stages    int     `json:"stages"`
	Bytes     int64   `json:"bytes"`
	Budget    float64 `json:"fp_budget"`    // the compound false-positive budget
	Estimated float64 `json:"fp_estimated"` // the rate the stages' fill gives
}

// readFilter reads a digest filter file (an 8-byte magic, then an
// internal/bloom filter, then a checksum this does not check).
func readFilter(path string) (FilterFigures, error) {
	f, err := os.Open(path)
	if err != nil {
		return FilterFigures{}, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	if _, err := br.Discard(8); err != nil {
		return FilterFigures{}, fmt.Errorf("benchscale: %s: %w", filepath.Base(path), err)
	}
	bf, err := bloom.ReadFrom(br)
	if err != nil {
		return FilterFigures{}, fmt.Errorf("benchscale: %s: %w", filepath.Base(path), err)
	}
	st := bf.Stats()
	return FilterFigures{Keys: st.Keys, Stages: st.Stages, Bytes: st.Bytes, Budget: st.Rate, Estimated: st.Estimated}, nil
}
