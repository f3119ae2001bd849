// Package benchetcd measures the load a crawl's coordination puts on an
// etcd coordinator: it backs "petrel bench etcd".
//
// One coordinator runs an embedded etcd member (coord.StartMember) under
// the crawl's certificate authority, derived from a generated crawl key,
// in a process of its own (Serve, started by StartProcess), so that its
// CPU and RAM can be read from /proc. The benchmark process simulates the
// agents, each with what package coord gives an agent and nothing more:
// its own client (coord.Dial), its lease (coord.GrantLease, kept alive by
// its own loop), its record (Crawl.Register), its figures published every
// interval with jitter (Crawl.PublishFigures), and a watch (what an agent
// follows, Crawl.FollowFrom; or the whole prefix, Crawl.Follow, with
// WatchPrefix). The first agent also writes the
// views (Crawl.Lead). Every ViewEvery one agent other than the writer
// leaves (a Publish with Leaving set, its lease revoked once a view
// without it is read) and comes back under a new name, which makes two
// view changes.
//
// What is counted: the requests the agents issue, through wrappers of
// the clients' KV and Lease (counting.go); etcd's own revision and raft
// index over the measured window; the coordinator's CPU and peak RSS;
// Publish's latency; and, for every view written in the window, the time
// from the start of its write to each agent reading it.
//
// Files:
//
//	doc.go       this map and the package's role
//	options.go   Options, their defaults and checks; Target
//	serve.go     Serve: the coordinator process; StartProcess, StartMember
//	counting.go  the counting wrappers of a client's KV and Lease
//	agent.go     agent: one simulated agent (lease, record, figures, watch, leave and return)
//	run.go       Run: the agents started, the window measured, the result made
//	proc.go      the coordinator's CPU, memory and waits for a CPU from /proc
//	result.go    Result, percentiles, the table
package benchetcd
