package cluster

import (
	"context"
	"maps"
	"slices"
)

// Ready batches logged by their sender before the outbox has them. A
// leaving agent writes the batches of the URLs it moves out into a log of
// its own before it puts them in the outbox, so that a start after a kill
// puts the same batches in the outbox again instead of moving a second
// time the URLs its checkpoint restores: a receiver applies a batch id
// once (idSet), however often it is sent. The ids of logged batches are of
// a stream of their own per process (LoggedIncarnation), apart from the
// batcher's.

// loggedRawBytes bounds a logged batch's records before compression, well
// within MaxBatchBytes even for records that do not compress.
const loggedRawBytes = 4 << 20

// LoggedIncarnation is the incarnation of this process's logged batches:
// its top bit set (never a process start's count), then this process's
// incarnation.
func (n *Node) LoggedIncarnation() uint64 { return 1<<63 | n.incarnation }

// EncodeReady returns the wire forms of ready batches holding recs, by
// destination in name order, each at most BatchURLs records: ids of the
// incarnation inc, numbered per destination on from seqs[dest], which it
// advances.
func (n *Node) EncodeReady(inc uint64, seqs map[string]uint64, byDest map[string][][]byte) []OutPut {
	epoch := n.viewEpoch()
	var puts []OutPut
	for _, dest := range slices.Sorted(maps.Keys(byDest)) {
		recs := byDest[dest]
		for len(recs) > 0 {
			var raw []byte
			count := 0
			for ; count < len(recs) && count < n.cfg.BatchURLs && len(raw) < loggedRawBytes; count++ {
				raw = appendRecord(raw, recs[count])
			}
			seqs[dest]++
			bt := &Batch{ID: BatchID{Sender: n.cfg.Name, Incarnation: inc, Seq: seqs[dest]}, Kind: KindReady, Epoch: epoch}
			puts = append(puts, OutPut{Dest: dest, ID: bt.ID, Wire: bt.encodeRaw(nil, raw, count)})
			recs = recs[count:]
		}
	}
	return puts
}

// PutLogged stores logged batches in the outbox, waiting for room. Putting
// a batch again (one the outbox holds, or its receiver has) is harmless.
func (n *Node) PutLogged(ctx context.Context, puts []OutPut) error {
	if len(puts) == 0 {
		return nil
	}
	if err := n.outbox.PutAll(ctx, puts, true); err != nil {
		return err
	}
	n.activity.Add(uint64(len(puts)))
	n.counts.sentBatches.Add(uint64(len(puts)))
	return nil
}
