package dashboard

import (
	"context"
	"time"

	"github.com/backwave/backwave/store"
)

// backlogCell is one Queue's ready and later counts and the age of its
// oldest ready job, as the Overview and Queues pages show them.
type backlogCell struct {
	Ready, Later int
	// ReadyAtLeast says Ready is a lower bound (QueueBacklog.ReadyAtLeast).
	ReadyAtLeast bool
	// Cap is the count cap the read used: where a count stops when a
	// Queue holds at least that many both ready and later.
	Cap int
	// Oldest is the oldest ready job's due time; zero when none is ready.
	Oldest time.Time
	// Age is the oldest ready job's age to the second; empty when none is
	// ready.
	Age string
}

// backlog reads Admin.Backlog (the due-time index) keyed by Queue.
func (s *server) backlog(ctx context.Context) (map[string]backlogCell, error) {
	bs, err := s.reader.Backlog(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make(map[string]backlogCell, len(bs))
	for _, b := range bs {
		// Admin.Backlog reads with the default BacklogParams.
		c := backlogCell{Ready: b.Ready, Later: b.Later, ReadyAtLeast: b.ReadyAtLeast, Cap: store.DefaultBacklogCountCap}
		if b.Ready > 0 {
			c.Oldest = b.OldestReady
			c.Age = b.Age(now).Truncate(time.Second).String()
		}
		out[b.Queue] = c
	}
	return out, nil
}
