package robots

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openTestStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreGolden pins the file format.
func TestStoreGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robots")
	s := openTestStore(t, path)
	rules := Parse([]byte("User-agent: *\nDisallow: /p\n"), "petrel").Rules()
	if err := s.Put("http://a.test", Entry{When: time.Unix(0, 1000), Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("http://b.test", Entry{When: time.Unix(0, -1), Dead: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	const want = "70657472656c20726f626f747320310a" + // "petrel robots 1\n"
		"16000000" + "95dc875e" + // n = 22, CRC-32C
		"0d687474703a2f2f612e74657374" + "01" + "d00f" + "0000022f70" + // "http://a.test", rules, 1000 ns, flat rules
		"10000000" + "204b4b4b" + // n = 16, CRC-32C
		"0d687474703a2f2f622e74657374" + "02" + "01" // "http://b.test", dead, -1 ns
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("store file\n got %s\nwant %s", got, want)
	}
}

func TestStorePutGetReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robots")
	s := openTestStore(t, path)
	r1 := Parse([]byte("User-agent: *\nDisallow: /private/\n"), "petrel").Rules()
	r2 := Parse([]byte("User-agent: *\nDisallow: /search\nCrawl-delay: 2\n"), "petrel").Rules()
	when := time.Unix(1700000000, 5)
	for _, c := range []struct {
		sa string
		e  Entry
	}{{"http://a.test", Entry{When: when, Rules: r1}}, {"http://b.test", Entry{When: when, Rules: AllowAll}},
		{"https://a.test:8443", Entry{When: when, Dead: true}}, {"http://a.test", Entry{When: when.Add(time.Hour), Rules: r2}}} {
		if err := s.Put(c.sa, c.e); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *Store) {
		t.Helper()
		if e, ok, err := s.Get("http://a.test"); err != nil || !ok || e.Rules != r2 || !e.When.Equal(when.Add(time.Hour)) || e.Dead {
			t.Errorf("a.test: %+v %v %v", e, ok, err)
		}
		if e, ok, _ := s.Get("http://b.test"); !ok || e.Rules != AllowAll {
			t.Errorf("b.test: %+v %v", e, ok)
		}
		if e, ok, _ := s.Get("https://a.test:8443"); !ok || !e.Dead {
			t.Errorf("a.test:8443: %+v %v", e, ok)
		}
		if _, ok, _ := s.Get("http://c.test"); ok {
			t.Error("c.test found")
		}
		if s.Len() != 3 {
			t.Errorf("Len = %d", s.Len())
		}
	}
	check(s) // read back through the write buffer
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, path)
	check(s)
	s.Close()
}

// TestStoreTornTail: a record cut short by a crash is dropped at open,
// and the records before it are kept.
func TestStoreTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robots")
	s := openTestStore(t, path)
	s.Put("http://a.test", Entry{When: time.Unix(1, 0), Rules: DisallowAll})
	s.Put("http://b.test", Entry{When: time.Unix(2, 0), Rules: DisallowAll})
	s.Close()
	st, _ := os.Stat(path)
	for _, cut := range []int64{1, 5, 9} {
		os.Truncate(path, st.Size()-cut)
		s = openTestStore(t, path)
		if _, ok, _ := s.Get("http://a.test"); !ok {
			t.Errorf("cut %d: a.test lost", cut)
		}
		if _, ok, _ := s.Get("http://b.test"); ok {
			t.Errorf("cut %d: torn b.test found", cut)
		}
		// The file goes on after the last whole record.
		s.Put("http://b.test", Entry{When: time.Unix(3, 0), Rules: AllowAll})
		s.Close()
		s = openTestStore(t, path)
		if e, ok, _ := s.Get("http://b.test"); !ok || e.Rules != AllowAll {
			t.Errorf("cut %d: b.test after the cut: %v", cut, ok)
		}
		s.Close()
		st, _ = os.Stat(path)
	}
	// A flipped bit in the last record is a torn tail too.
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	os.WriteFile(path, b, 0o644)
	s = openTestStore(t, path)
	if _, ok, _ := s.Get("http://b.test"); ok {
		t.Error("corrupt record found")
	}
	s.Close()
	os.WriteFile(path, []byte("not a store"), 0o644)
	if _, err := OpenStore(path); err == nil {
		t.Error("a foreign file opened as a store")
	}
}

func TestStoreCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robots")
	s := openTestStore(t, path)
	s.compactAt = 4096
	rules := Parse([]byte("User-agent: *\nDisallow: /private/\n"), "petrel").Rules()
	for i := range 2000 {
		sa := "http://h" + string(rune('a'+i%10)) + ".test"
		if err := s.Put(sa, Entry{When: time.Unix(int64(i), 0), Rules: rules}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Bytes() > 8192 {
		t.Errorf("store of 10 authorities is %d bytes after 2000 puts", s.Bytes())
	}
	s.Close()
	s = openTestStore(t, path)
	defer s.Close()
	for i := 1990; i < 2000; i++ {
		sa := "http://h" + string(rune('a'+i%10)) + ".test"
		if e, ok, _ := s.Get(sa); !ok || e.When.Unix() != int64(i) {
			t.Errorf("%s: %v %v", sa, e.When.Unix(), ok)
		}
	}
}

// TestStoreSyncs: a new store's header is synced, and a compacted file is
// synced whole before it is renamed over the old one, so that a crash of
// the machine never leaves a store a restart cannot open; records as they
// are put are not (a lost one is a robots.txt fetched again).
func TestStoreSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robots")
	var synced []string
	fsync := func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		_, renamed := os.Stat(path + ".tmp")
		synced = append(synced, fmt.Sprintf("%s %d bytes, renamed %v", filepath.Base(f.Name()), st.Size(), renamed != nil))
		return f.Sync()
	}
	s, err := openStore(path, fsync)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := fmt.Sprintf("robots %d bytes, renamed true", len(storeHeader)); len(synced) != 1 || synced[0] != want {
		t.Fatalf("opening a new store synced %q, want [%q]", synced, want)
	}
	s.compactAt = 4096
	rules := Parse([]byte("User-agent: *\nDisallow: /private/\n"), "petrel").Rules()
	for i := range 300 {
		if err := s.Put("http://h"+string(rune('a'+i%10))+".test", Entry{When: time.Unix(int64(i), 0), Rules: rules}); err != nil {
			t.Fatal(err)
		}
	}
	if len(synced) < 2 {
		t.Fatalf("no compaction synced its file: %q", synced)
	}
	for _, c := range synced[1:] {
		if !strings.HasPrefix(c, "robots.tmp ") || !strings.HasSuffix(c, "renamed false") || strings.HasPrefix(c, "robots.tmp 0 bytes") {
			t.Errorf("sync %q: want the compacted file, whole, before its rename", c)
		}
	}
	synced = synced[:0]
	s.Flush()
	if len(synced) != 0 {
		t.Errorf("a flush of records synced %q", synced)
	}
}
