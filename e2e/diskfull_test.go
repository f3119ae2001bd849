package e2e

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// smallFS is a tmpfs of a chosen size mounted in a mount namespace of its
// own, held by a sleeping process: the commands the test runs in it see
// the mount, the rest of the machine does not, and it goes when the test
// ends.
type smallFS struct {
	holder *exec.Cmd
	mnt    string // the mount point, as the namespace's processes see it
}

// newSmallFS mounts a tmpfs of size (as mount(8) takes it: "3m") in a new
// mount namespace, or skips the test where one cannot be made (it needs
// unshare and nsenter, and root).
func newSmallFS(t *testing.T, size string) *smallFS {
	t.Helper()
	for _, c := range []string{"unshare", "nsenter", "mount"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("a small filesystem needs %s: %v", c, err)
		}
	}
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "3600")
	if err := holder.Start(); err != nil {
		t.Skipf("a small filesystem needs a mount namespace: unshare: %v", err)
	}
	fs := &smallFS{holder: holder, mnt: t.TempDir()}
	t.Cleanup(func() {
		holder.Process.Kill()
		holder.Wait()
	})
	// The namespace is the holder's once unshare has exec'd sleep.
	self, _ := os.Readlink("/proc/self/ns/mnt")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ns, err := os.Readlink(filepath.Join(fs.proc(), "ns", "mnt")); err == nil && ns != self {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("a small filesystem needs unshare --mount (root): the namespace did not appear")
		}
	}
	if out, err := fs.command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", fs.mnt).CombinedOutput(); err != nil {
		t.Skipf("a small filesystem needs root: mount tmpfs: %v: %s", err, out)
	}
	return fs
}

// proc is the holder's /proc directory.
func (fs *smallFS) proc() string { return filepath.Join("/proc", strconv.Itoa(fs.holder.Process.Pid)) }

// command is name args run in the namespace.
func (fs *smallFS) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(fs.holder.Process.Pid), "-m", "--", name}, args...)...)
}

// path is p, a path in the namespace, as this process reaches it.
func (fs *smallFS) path(p string) string { return filepath.Join(fs.proc(), "root", p) }

// resize gives the tmpfs a new size, keeping what it holds.
func (fs *smallFS) resize(t *testing.T, size string) {
	t.Helper()
	if out, err := fs.command("mount", "-o", "remount,size="+size, fs.mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount tmpfs: %v: %s", err, out)
	}
}

// TestDiskFullAndResume crawls into a filesystem too small for the crawl:
// the run fails with "no space left on device", leaves the directory
// marked for crash recovery and its WARC file open, which "warc check"
// reports. Once the filesystem is larger, the same command recovers (the
// open file cut to its last whole record, renamed and indexed) and
// finishes: every URL of the synthetic web is fetched over the two runs
// and has its record in the WARC files; none is lost.
func TestDiskFullAndResume(t *testing.T) {
	fs := newSmallFS(t, "3m")
	r := startWeb(t, testweb.Config{Hosts: 20, HostsPerIP: 4, PagesPerHost: 150, Seed: 17, FirstIP: netip.MustParseAddr("127.71.0.1")})
	dir := filepath.Join(fs.mnt, "crawl")
	args := []string{"crawl", "--dir", dir, "--hosts", r.hosts, "--seeds", r.seeds, "--allow-private", "--system-dns=false",
		"--progress", "0", "--host-delay", "10ms", "--ip-delay", "5ms", "--retry-delay", "100ms", "--fetch-timeout", "10s",
		"--checkpoint-every", "300ms"}
	run := func(name string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := fs.command(petrel, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%s did not end within 2 minutes:\n%s", name, stderr.String())
		}
		return stderr.String(), err
	}

	first, err := run("the run on a full disk")
	if err == nil || !strings.Contains(first, "no space left on device") {
		t.Fatalf("the run on a 3 MiB filesystem: %v, want a failure for lack of space; stderr:\n%s", err, first)
	}
	if !strings.Contains(first, "run the same command: it recovers from the last checkpoint") {
		t.Errorf("the failed run did not say what to do:\n%s", first)
	}
	if _, err := os.Stat(fs.path(filepath.Join(dir, "state", "RUNNING"))); err != nil {
		t.Errorf("after a close that could not save the state, state/RUNNING is gone (%v): the next start would not recover", err)
	}
	open, _ := filepath.Glob(fs.path(filepath.Join(dir, "warc", "*.warc.gz.open")))
	if len(open) == 0 {
		t.Fatal("the failed run left no open WARC file: the test no longer covers its repair")
	}
	check := fs.command(petrel, "warc", "check", dir)
	var checkOut bytes.Buffer
	check.Stdout, check.Stderr = &checkOut, &checkOut
	if err := check.Run(); err == nil || !strings.Contains(checkOut.String(), filepath.Base(open[0])+": still open") {
		t.Errorf("warc check after the failed run: %v, want it to name the open file %s:\n%s", err, filepath.Base(open[0]), checkOut.String())
	}
	hitsFirst := len(r.web.Hits())

	fs.resize(t, "256m")
	second, err := run("the resumed run")
	if err != nil {
		t.Fatalf("the resumed run: %v\n%s", err, second)
	}
	if !strings.Contains(second, "did not stop cleanly") || !strings.Contains(second, "closed with") {
		t.Errorf("the resumed run did not recover and repair the open WARC file:\n%s", second)
	}
	if !strings.Contains(second, "complete: nothing left to fetch") {
		t.Errorf("the resumed run did not finish the crawl:\n%s", second)
	}
	hits := r.web.Hits()
	t.Logf("%d requests in the run on a full disk, %d in all", hitsFirst, len(hits))

	expected := map[string]bool{}
	for _, u := range r.web.Expected() {
		expected[urlKey(t, u)] = true
	}
	seen := map[string]bool{}
	for _, h := range hits {
		seen[key(h.Host, h.Path)] = true
	}
	for k := range expected {
		if !seen[k] {
			t.Errorf("%s was never fetched: lost across the full disk and the resume", k)
		}
	}
	warcDir := fs.path(filepath.Join(dir, "warc"))
	if left, _ := filepath.Glob(filepath.Join(warcDir, "*.open")); len(left) > 0 {
		t.Errorf("open WARC files left after the resumed crawl: %v", left)
	}
	for _, f := range mustWARCFiles(t, warcDir) {
		if _, err := os.Stat(strings.TrimSuffix(f, ".warc.gz") + ".cdxj"); err != nil {
			t.Errorf("%s has no index: %v", filepath.Base(f), err)
		}
	}
	// Every page has its record: those whose records the full disk lost
	// were fetched again.
	checkWARCRequests(t, warcDir, expected, len(expected), len(hits))
}

// mustWARCFiles lists the finished WARC files of dir.
func mustWARCFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := store.WARCFiles([]string{dir})
	if err != nil || len(files) == 0 {
		t.Fatalf("WARC files of %s: %v, %v", dir, files, err)
	}
	return files
}
