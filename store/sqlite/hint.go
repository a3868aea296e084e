package sqlite

// SubscribeHints calls fn with a Queue's name after a call of this Store
// commits something that may have made jobs claimable in it: an insert of
// jobs due now, an applied outcome (a retry, or a freed Concurrency-Limit
// slot), a lease expiry or Relinquish back to Scheduled, a resume, or a new
// limit. fn is called synchronously after the commit, before the call
// returns, once per Queue and call, Queues in name order. fn must not block;
// it may call the store. The returned func unsubscribes.
//
// Hints are in-process only: another process sharing the file hears none,
// and finds the jobs at its next poll. A hint may also name a Queue where
// nothing turned out to be claimable. Either way a hint only cuts latency.
func (s *Store) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	return s.hints.Subscribe(fn)
}
