package cluster

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestPlacementsFileGolden pins the placements file byte for byte.
func TestPlacementsFileGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "placements")
	p, _, err := OpenPlacements(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Keep("a.test", netip.MustParseAddr("10.1.2.3"))
	p.Keep("b.test", netip.MustParseAddr("2001:db8::1"))
	p.Keep("a.test", netip.MustParseAddr("10.9.9.9")) // placed already: nothing written
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "placements.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(hex.Dump(b)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if hex.Dump(b) != string(want) {
		t.Errorf("placements file changed:\n%s\nwant:\n%s", hex.Dump(b), want)
	}
}

// TestPlacementsSurviveRestart: hosts placed by one process are placed at
// the same addresses by the next, after a Close or with none (a kill:
// each placement is written at once), a later offer changing nothing; a
// record cut short by the kill or damaged is dropped, counted, and the
// file rewritten without it.
func TestPlacementsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster", "placements")
	first, later := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	p, dropped, err := OpenPlacements(path, 0)
	if err != nil || dropped != 0 || p.Len() != 0 {
		t.Fatalf("open a new file: %v, %d dropped, %d kept", err, dropped, p.Len())
	}
	for i := range 20 {
		p.Keep(fmt.Sprintf("h%d.test", i), first)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	p.Keep("killed.test", first) // no Sync, no Close: the process is killed
	check := func(p *Placements, n int) {
		t.Helper()
		if p.Len() != n {
			t.Errorf("%d hosts placed, want %d", p.Len(), n)
		}
		for _, h := range []string{"h0.test", "h19.test", "killed.test"} {
			if a, ok := p.Get(h); !ok || a != first {
				t.Errorf("%s placed at %v %v, want %v", h, a, ok, first)
			}
			if a := p.Keep(h, later); a != first {
				t.Errorf("%s placed at %v after a restart, want %v", h, a, first)
			}
		}
	}
	p2, dropped, err := OpenPlacements(path, 0)
	if err != nil || dropped != 0 {
		t.Fatalf("reopen: %v, %d dropped", err, dropped)
	}
	check(p2, 21)
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}

	// A record cut short at the end, and a record damaged in the middle.
	b, _ := os.ReadFile(path)
	b[len(placementsMagic)+3*placementSize+5] ^= 0xFF
	b = append(b, appendPlacement(nil, xxhash.Sum64String("torn.test"), first)[:11]...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p3, dropped, err := OpenPlacements(path, 0)
	if err != nil || dropped != 2 {
		t.Fatalf("reopen a damaged file: %v, %d dropped, want 2", err, dropped)
	}
	if _, ok := p3.Get("torn.test"); ok {
		t.Error("a record cut short was read")
	}
	check(p3, 20)
	p3.Close()
	if fi, _ := os.Stat(path); fi.Size() != int64(len(placementsMagic)+20*placementSize) {
		t.Errorf("the damaged file was not rewritten: %d bytes", fi.Size())
	}
	if p4, dropped, err := OpenPlacements(path, 0); err != nil || dropped != 0 || p4.Len() != 20 {
		t.Errorf("reopen the rewritten file: %v, %d dropped, %d hosts", err, dropped, p4.Len())
	}
	if err := os.WriteFile(path, []byte("not a placements file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenPlacements(path, 0); err == nil {
		t.Error("a file of another format was opened")
	}
}

// TestPlacementsFileBounded: the file of a Placements past its bound is
// rewritten before it holds twice the bound, and a host's later record
// (placed again after it was forgotten) is the one read back.
func TestPlacementsFileBounded(t *testing.T) {
	const max = 50
	path := filepath.Join(t.TempDir(), "placements")
	p, _, err := OpenPlacements(path, max)
	if err != nil {
		t.Fatal(err)
	}
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for i := range 10 * max {
		p.Keep(fmt.Sprintf("h%d.test", i), a)
		if fi, _ := os.Stat(path); fi.Size() > int64(len(placementsMagic)+2*max*placementSize) {
			t.Fatalf("after %d hosts the file has %d bytes, over twice the bound", i+1, fi.Size())
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(appendPlacement(nil, xxhash.Sum64String("again.test"), a))
	f.Write(appendPlacement(nil, xxhash.Sum64String("again.test"), b))
	f.Close()
	p2, dropped, err := OpenPlacements(path, max)
	if err != nil || dropped != 0 || p2.Len() > max {
		t.Fatalf("reopen: %v, %d dropped, %d hosts (bound %d)", err, dropped, p2.Len(), max)
	}
	if got, ok := p2.Get("again.test"); !ok || got != b {
		t.Errorf("again.test at %v %v, want its later record's %v", got, ok, b)
	}
}
