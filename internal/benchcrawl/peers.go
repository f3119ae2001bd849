package benchcrawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// peerResult is the final JSON line of the Colly, Scrapy and Crawlee
// crawlers.
type peerResult struct {
	Pages    int64   `json:"pages"`
	Errors   int64   `json:"errors"`
	Robots   int64   `json:"robots_blocked"`
	Bytes    int64   `json:"bytes_received"`
	ElapsedS float64 `json:"elapsed_s"`
	Stopped  bool    `json:"stopped"`
}

// fromPeer fills in res from a peer crawler's process pr: its page count
// from the final JSON line on stdout (else its last progress line, and an
// error).
func (res *RunResult) fromPeer(pr procResult) {
	res.fromProc(pr)
	res.Pages = pr.pages
	var r peerResult
	found := false
	for i := len(pr.stdout) - 1; i >= 0 && !found; i-- {
		found = json.Unmarshal([]byte(pr.stdout[i]), &r) == nil
	}
	if !found {
		res.Error = joinErr(res.Error, "no final JSON line")
		return
	}
	res.Pages, res.BytesReceived = r.Pages, r.Bytes
	res.SelfReportedS = r.ElapsedS
	if r.Errors > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d requests failed for good (network errors, or errors after the crawler's retries)", r.Errors))
	}
}

// progressLine counts a peer's "pages N (R/s)" progress lines.
func progressLine(l string, pages *atomic.Int64) {
	if n, ok := parseProgress(l); ok {
		pages.Store(n)
	}
}

// peerArgs are the flags the Scrapy and Crawlee crawlers share: seeds,
// delays in seconds, the concurrency cap, the page bound, the progress
// interval.
func peerArgs(o Options, seeds string) []string {
	args := []string{"--seeds", seeds,
		"--host-delay", strconv.FormatFloat(o.HostDelay.Seconds(), 'f', -1, 64),
		"--ip-delay", strconv.FormatFloat(o.IPDelay.Seconds(), 'f', -1, 64),
		"--concurrency", strconv.Itoa(o.PeerConcurrency),
		"--progress", strconv.FormatFloat(o.Progress.Seconds(), 'f', -1, 64)}
	if o.MaxURLs > 0 {
		args = append(args, "--max-urls", strconv.FormatInt(o.MaxURLs, 10))
	}
	return args
}

// namespaced runs cmd, with env, in a private mount namespace whose
// /etc/hosts is the web's hosts file and whose name service consults
// files only (see enterNamespace), measured as every crawler is, and
// fills in res. It reports false if the peer did not run.
func namespaced(ctx context.Context, o Options, web *webProc, dir string, cmd, env []string, res *RunResult) (procResult, bool) {
	unshare, ns, ok := enterNamespace(ctx, web, dir, res)
	if !ok {
		return procResult{}, false
	}
	args := ns.wrap(cmd)
	res.Command = strings.TrimSpace(strings.Join(env, " ") + " " + unshare + " " + strings.Join(args, " "))
	pr := runMeasured(ctx, procSpec{
		name: unshare, args: args, dir: dir, bound: o.TimeBound, every: o.Progress, stop: syscall.SIGINT,
		env:    append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "LC_ALL=C.UTF-8"}, env...),
		onLine: progressLine,
	})
	res.fromPeer(pr)
	return pr, true
}

// enterNamespace makes dir afresh and prepares there the namespace of a
// crawler that resolves names with the system resolver, proving that a
// name of the web resolves from its hosts file only (prepareNamespace).
// It returns the unshare command and the namespace, or false with
// res.Skipped or res.Error set.
func enterNamespace(ctx context.Context, web *webProc, dir string, res *RunResult) (string, namespace, bool) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		res.Skipped = "unshare not found: " + res.Crawler + " cannot be kept off DNS"
		return "", namespace{}, false
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Error = err.Error()
		return "", namespace{}, false
	}
	var present string
	for n := range web.hosts.ipOf {
		present = n
		break
	}
	ns, err := prepareNamespace(ctx, unshare, web.hostsPath, present, dir)
	if err != nil {
		res.Skipped = res.Crawler + " not run: cannot prove its names stay off DNS: " + err.Error()
		return "", namespace{}, false
	}
	return unshare, ns, true
}

// runScrapy crawls the web with the Scrapy crawler of bench/scrapy, run by
// Debian's python3 with python3-scrapy.
func runScrapy(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: PeerScrapy, PagesChecked: -1}
	script, err := benchFile(o, "scrapy/crawl.py")
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	if out, err := exec.CommandContext(ctx, o.Python, "-c", "import scrapy").CombinedOutput(); err != nil {
		res.Skipped = fmt.Sprintf("scrapy not importable by %s (apt-get install -y python3-scrapy): %v %s", o.Python, err, strings.TrimSpace(string(out)))
		return res
	}
	cmd := append([]string{o.Python, script}, peerArgs(o, web.seedsPath)...)
	if web.caPath != "" {
		cmd = append(cmd, "--ca-file", web.caPath)
	}
	if _, ok := namespaced(ctx, o, web, dir, cmd, nil, &res); !ok {
		return res
	}
	res.Notes = append(res.Notes, "Scrapy: CONCURRENT_REQUESTS_PER_DOMAIN 1 with DOWNLOAD_DELAY = host delay (counted from the start of the previous request, not randomised), AutoThrottle off, robots.txt obeyed, the broad-crawl scheduler (DownloaderAwarePriorityQueue, breadth-first); it cannot express the per-IP delay beside it; stores nothing; names from the namespace's /etc/hosts; TLS verified against the web's CA (Scrapy's default context verifies nothing)")
	return res
}

// runCrawlee crawls the web with the CheerioCrawler of bench/crawlee, run
// by node with crawlee from o.ToolsDir/node_modules.
func runCrawlee(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: PeerCrawlee, PagesChecked: -1}
	script, err := benchFile(o, "crawlee/crawl.js")
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	modules := filepath.Join(o.ToolsDir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "crawlee", "package.json")); err != nil {
		res.Skipped = fmt.Sprintf("crawlee not installed in %s (npm install crawlee@3.18.1 in $PETREL_TOOLS_DIR)", o.ToolsDir)
		return res
	}
	if o.Node == "" {
		res.Skipped = "node not found (apt-get install -y nodejs)"
		return res
	}
	env := []string{"NODE_PATH=" + modules, "CRAWLEE_STORAGE_DIR=" + filepath.Join(dir, "storage")}
	if web.caPath != "" {
		env = append(env, "NODE_EXTRA_CA_CERTS="+web.caPath)
	}
	cmd := append([]string{o.Node, script}, peerArgs(o, web.seedsPath)...)
	if _, ok := namespaced(ctx, o, web, dir, cmd, env, &res); !ok {
		return res
	}
	res.Notes = append(res.Notes, "Crawlee CheerioCrawler: maxConcurrency = the cap, sameDomainDelaySecs = host delay (per registrable domain, from the start of the previous request: on the small shape every host is under petrel.test, one domain), respectRobotsTxtFile; it cannot express the per-IP delay; stores nothing (request queue in memory, persistStorage off); names from the namespace's /etc/hosts; the web's CA by NODE_EXTRA_CA_CERTS")
	return res
}

// benchFile returns the absolute path of rel under the repository's
// bench directory: o.BenchDir, or bench/ under the nearest directory
// above the working directory that holds it.
func benchFile(o Options, rel string) (string, error) {
	if o.BenchDir != "" {
		p, err := filepath.Abs(filepath.Join(o.BenchDir, rel))
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			return "", fmt.Errorf("bench file: %w", err)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("bench file: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bench", rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("bench/" + rel + " not found above the working directory (set Options.BenchDir)")
		}
	}
}
