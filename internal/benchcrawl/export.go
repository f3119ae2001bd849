package benchcrawl

import (
	"io"
	"time"
)

// Helpers shared with the other process benchmarks (internal/benchscale).

// LineWriter splits what a child process writes into lines, hands each to
// a function and keeps the last ones; lines and kept output are bounded.
type LineWriter struct{ w lineWriter }

// NewLineWriter returns a LineWriter calling fn (which may be nil) with
// every line.
func NewLineWriter(fn func(line string)) *LineWriter { return &LineWriter{w: lineWriter{fn: fn}} }

// Write implements io.Writer.
func (l *LineWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

// Flush hands an unfinished last line to the function.
func (l *LineWriter) Flush() { l.w.flush() }

// Lines returns the last lines seen.
func (l *LineWriter) Lines() []string { return l.w.lines() }

// ProcCPU returns the user+sys CPU time a running process has used so far.
func ProcCPU(pid int) (time.Duration, error) { return procCPU(pid) }

// NiceStep returns a step of the form {1,2,5}×10^k that cuts [0,max] into
// at most about n intervals.
func NiceStep(max float64, n int) float64 { return niceStep(max, n) }

// FmtTick formats an axis value compactly.
func FmtTick(v float64) string { return fmtTick(v) }

// ThisMachine describes this machine (CPUs, model, memory, Go version).
func ThisMachine() Machine { return machine() }

// Reporter is what a benchmark reports.
type Reporter interface {
	WriteJSON(io.Writer) error
	WriteTable(io.Writer) error
}

// WriteReport writes rep as JSON to jsonOut and as a table to tableOut
// (either may be nil), then, when plot names a file, calls writePlot.
func WriteReport(rep Reporter, jsonOut, tableOut io.Writer, plot string, writePlot func(path string) error) error {
	if jsonOut != nil {
		if err := rep.WriteJSON(jsonOut); err != nil {
			return err
		}
	}
	if tableOut != nil {
		if err := rep.WriteTable(tableOut); err != nil {
			return err
		}
	}
	if plot != "" {
		return writePlot(plot)
	}
	return nil
}
