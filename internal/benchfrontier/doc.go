// Package benchfrontier measures the real frontier (DRUM sieve, disk ready
// queue, workbench, virtualizer, scheduler) driven by fake fetchers that
// answer at once, with no network: how many URLs per second the scheduler
// hands out across many keys while keeping every politeness gap, and how
// much RAM and disk a queued URL costs. It backs "petrel bench frontier".
package benchfrontier
