package agent

import (
	"encoding/hex"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestHandoversFileGolden pins the handovers file byte for byte, and reads
// it back; a file cut short or with a byte changed is refused.
func TestHandoversFileGolden(t *testing.T) {
	keys := []frontier.HandoverKey{
		{Key: "http://a.test", Host: "a.test", Addr: netip.MustParseAddr("10.1.2.3"), Gen: 3},
		{Key: "https://b.test:8443", Host: "b.test", Addr: netip.MustParseAddr("2001:db8::7"), Gen: 2, MovedTo: "agent2"},
	}
	b := encodeHandovers(keys)
	golden := filepath.Join("testdata", "handovers.golden")
	dump := hex.Dump(b)
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(dump), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if dump != string(want) {
		t.Errorf("handovers file changed:\n%s\nwant:\n%s", dump, want)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, handoversFile)
	if err := writeHandovers(path, keys); err != nil {
		t.Fatal(err)
	}
	got, err := loadHandovers(path)
	if err != nil || !reflect.DeepEqual(got, keys) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(append([]byte(nil), b[:20]...), append([]byte{b[20] ^ 1}, b[21:]...)...)} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadHandovers(path); err == nil {
			t.Errorf("a damaged file (%d bytes) was read", len(bad))
		}
	}
	if err := writeHandovers(path, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("no keys: the file is kept (%v)", err)
	}
	if got, err := loadHandovers(path); got != nil || err != nil {
		t.Errorf("no file: %+v, %v", got, err)
	}
}
