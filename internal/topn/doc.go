// Package topn keeps the n greatest of a stream of values: the console's
// "top hosts" lists over every visit state or every host fetched from,
// without sorting them all.
//
// Invariants: a Top holds at most n values, as a min-heap by its order
// (the least of those kept at the root), so Push costs O(log n) and a
// stream of m values O(m log n) with O(n) memory. Values that rank equal
// keep no particular order: give the order a tie-break (a name) for a
// stable answer. A Top is not safe for concurrent use.
package topn
