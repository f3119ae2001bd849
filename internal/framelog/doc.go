// Package framelog is the one framing of the durable logs a crawl keeps
// beside its frontier: the cluster's outbox and inbox, the agent's log of
// hand-off parts received (state/counts.received) and of a leave's moved
// URLs (state/cluster/leave.moved). It is a package of its own because
// logs of both package cluster and package agent use it.
//
// A log is a file (or a run of segment files) of an optional header —
// a magic naming the log and its version, then fixed bytes of the log's
// own — and frames:
//
//	uint32 length of the body (little endian)
//	uint32 CRC-32C (Castagnoli) of the body (little endian)
//	body
//
// What a body holds is the log's own. A frame cut short, longer than the
// log's bound, or whose checksum fails is torn: reading stops before it,
// and a log opened for appending cuts it off (a kill during a write).
//
// One responsibility per file:
//
//	doc.go         this map and the format
//	frame.go       a frame: encoding, reading one after another
//	file.go        a log file: its header and frames read back, its torn tail cut,
//	               rewritten whole (compaction), segment files' names
//	writer.go      Writer: appending to a log's head file, rolling to a new one
//	groupcommit.go fsyncs shared by the writers of a log
package framelog
