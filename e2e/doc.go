// Package e2e holds Petrel's end-to-end tests: they build the petrel
// command, start the synthetic web on loopback, crawl it through the
// command's stable flags, and judge the crawl from the synthetic web's own
// request log and from the WARC files read back with the gowarc library.
//
// The petrel command the tests run is built without -race even when the
// tests are built with it (main_test.go): the crawler's concurrency runs
// under the detector in its packages' own tests, and a race-instrumented
// crawler on two cores is several times slower. TestCrawlSyntheticWeb
// and TestCrawlHostileWeb run a build with -race: whole crawls under the
// detector end to end (and the hostile web, served by this process with
// an IP delay of 5 ms, is judged from a log whose times lag a crawler
// built without the detector).
//
// The synthetic web runs in the test process, except for the cluster
// tests that kill or stop an agent (TestClusterKillAndRestart, the death
// tests, TestClusterThreeCoordinators) and TestClusterThreeAgents: they
// serve it from a petrel testweb process, which writes its request log
// to a file once stopped (webproc_test.go; TestWebProcessLog checks that
// log against a client's own times), so that their politeness judgement
// is the same under -race as without it.
//
// Most tests run one at a time: the cluster death tests
// (TestClusterStopPastGrace, TestClusterKillPastGrace) judge duplicates
// against what the agents did within a grace period, TestClusterWhy that
// no request to a blocked host starts a quarter of a second after its
// blocking, and the hostile web measures the process's memory and
// descriptors. The other cluster tests, and the console's API and "why",
// spend most of their time waiting for the crawl (delays keep the agents
// idle): they call t.Parallel and run
// after the others, two at a time (go test's -parallel, GOMAXPROCS by
// default), each on its own loopback addresses and directories, and judge
// only what waiting longer cannot change (pages fetched once, politeness
// gaps at least the delays, ownership shares, exit codes).
//
// The agents of the cluster tests coordinate on etcd embedded in the
// first agent (three of them in TestClusterThreeCoordinators), or on an
// etcd server that is not a Petrel process (TestClusterExternalEtcd:
// Debian's etcd-server; skipped, saying so, where it is not installed,
// unless PETREL_REQUIRE_ETCD=1 as in CI), with leases of 2 s.
//
// TestDiskFullAndResume runs petrel on a real filesystem too small for the
// crawl: a tmpfs mounted in a mount namespace of its own (unshare and
// nsenter, which need root; the test skips, saying so, where they fail),
// resized for the resume (diskfull_test.go).
//
// TestDocSites (docsites_test.go) is the documentation-sites scenario:
// the PostgreSQL and Python manuals Debian installs, each served by an
// unprivileged nginx of its own on 127.0.77.1–.6, crawled with the
// defaults and compared with wget -r -p, two crawls through a 20-second
// outage of one site, and every HTML page of the WACZ replayed in
// ReplayWeb.page in a few tabs at once. It takes about an hour and runs
// only with PETREL_DOCSITES=1 (BENCHMARKS.md).
//
// dedup_test.go crawls a web twice, the second time with --dedup-index
// of the first (TestDedupIndex: revisit records naming the first crawl's
// captures, judged from both crawls' indexes and WARC files and with
// warcio), and replays both crawls in one WACZ (TestReplayDedup).
package e2e
