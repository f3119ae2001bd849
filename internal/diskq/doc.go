// Package diskq holds the frontier's disk queues: Queue, a persistent FIFO
// of byte records (BUbiNG's readyURLs, a ByteArrayDiskQueue), and Queues,
// many logical FIFO queues sharing append-only segment files (the store of
// the workbench virtualizer, which moves the tails of visit-state queues to
// disk).
//
// # Files
//
// Both types keep their records in segment files named by a 16-digit hex
// sequence number (".dq" for Queue, ".mq" for Queues). Every segment starts
// with a 32-byte header (magic, format version, sequence number, base
// position, CRC-32C). Both write blocks of records, each compressed with
// zstd as a whole and carrying its sizes, record count and a CRC-32C
// (format version 2 of each); a Queues block holds runs of records of a
// few ids, each record tagged with its id. The exact layouts are
// documented in format.go, block.go, queue.go, queues.go and
// queues_blocks.go, next to the code that reads and writes them;
// segment.go holds the segment writer both types share, and says when its
// bytes reach the file and the disk. Files of an earlier format version are refused with
// ErrOldFormat, naming the file and both versions.
//
// # Invariants
//
//   - Segment files are append-only and written sequentially through a
//     write buffer; only the last segment of a directory is ever written.
//   - Only the last segment can end in an invalid block, the torn write of
//     a crash. Opening cuts such a tail at the last valid one and reports
//     it (Recovery, and a log line); an invalid block elsewhere, or one met
//     while popping, is reported as ErrCorrupt and never skipped or misread.
//   - Queue: records are buffered in an open block of up to
//     Options.BufferBytes, sealed (compressed and written) when it fills,
//     and by Sync, Mark, Scan and Close; a sealed block never changes. A
//     Pop that finds no sealed record takes the open block's first record
//     in RAM, and a seal writes only the records not yet popped, so a queue
//     that runs near empty writes nothing for records pushed and popped
//     between two seals. A Position names the head as a block's offset and
//     the records of that block already popped.
//   - Small state files (queue.meta, queues.index) are replaced atomically:
//     written to a temporary file, fsynced (with Options.Sync), renamed.
//   - Queue: records are popped in push order; segments before the head are
//     deleted unless a mark (Mark, OpenAt) still needs them, until Release.
//   - Queues: records are held in RAM, per id, until they reach
//     Options.BufferBytes (or Sync, Snapshot, Checkpoint or Close), then
//     sealed id by id into blocks of about 8 KiB raw; a Position names a
//     block's logical offset and the record's index in it.
//   - Queues: records of one id are dequeued in enqueue order; a segment
//     with no live record is deleted; when the dead bytes of the closed
//     segments exceed both their live bytes and one segment, the mostly dead
//     segments are compacted by copying their live records forward, so disk
//     use stays within about twice the live data plus two segments.
//
// # Crash safety
//
// Queue: Mark returns a Position (head, tail, length) after making every
// pushed record durable; OpenAt returns to it exactly, however the process
// died. Open after a crash is at-least-once: the head goes back to the last
// Open, Sync, Mark or Close, so records popped since come back (except
// those popped from the open block, which were never written); records
// pushed and sealed before the crash are kept (the open block is lost), a
// torn tail is cut.
//
// Queues: Close persists the index; OpenQueues restores every queue
// exactly. Without an index (a crash) the index is rebuilt by scanning all
// segments, which is at-least-once (records not sealed before the crash,
// still in RAM, are lost; Sync seals them): records still in a segment
// come back even if they had been dequeued, or were copied by a
// compaction the crash interrupted. Checkpoint takes an exact snapshot of
// every queue into another directory: hard links to the sealed segments
// (immutable from then on) and the index, shared copy-on-write with the
// live queues and written when the caller calls the returned finish;
// OpenCheckpoint reads it (checkpoint.go).
//
// # Memory
//
// Queue holds four buffers of about Options.BufferBytes (the open block,
// up to half as much again while pops consume its head; the block being
// written; the read-ahead; the decoded head block) and a zstd encoder and
// decoder (about 2 MiB). Queues holds the records not yet sealed (up to
// Options.BufferBytes, in one buffer per id), a zstd encoder and decoder,
// one decoded block and, per queued record on disk, its position as a
// zigzag varint delta (1 byte within a block, about 5 between blocks; see
// IndexBytes), plus about 100 bytes per non-empty queue.
//
// Both types are safe for concurrent use; each operation holds one mutex.
// Neither starts goroutines.
package diskq
