// Package framelog is the one framing of the durable logs kept beside the
// frontier: the cluster's outbox and inbox, the agent's logs of hand-off
// parts received (state/counts.received) and of a leave's moved URLs
// (state/cluster/leave.moved), and the robots.txt store (package robots).
// It is a package of its own because logs of several packages use it.
//
// A log is a file, or a run of segment files, of a header (a magic naming
// the log and its version, then bytes of the log's own; none for the
// inbox's segments), then frames:
//
//	uint32 length of the body (little endian)
//	uint32 CRC-32C (Castagnoli) of the body (little endian)
//	body (the log's own)
//
// A frame cut short, longer than the log's bound, or whose checksum fails
// is torn: reading stops before it, and a log opened for appending cuts
// it off (a kill during a write).
//
//	doc.go    this map and the format
//	frame.go  a frame: encoding, reading one after another, checking one in memory
//	file.go   a log file read back (Scan) or rewritten whole (Rewrite); segment files' names
//	writer.go Writer: appending to a log's head file, group-committed fsyncs, a new head file
package framelog
