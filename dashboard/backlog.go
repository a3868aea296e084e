package dashboard

import (
	"context"
	"time"
)

// backlogCell is one Queue's ready and later counts and the age of its
// oldest ready job, as the Overview and Queues pages show them.
type backlogCell struct {
	Ready, Later int
	// ReadyAtLeast says Ready is a lower bound (QueueBacklog.ReadyAtLeast).
	ReadyAtLeast bool
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
		c := backlogCell{Ready: b.Ready, Later: b.Later, ReadyAtLeast: b.ReadyAtLeast}
		if b.Ready > 0 {
			c.Age = b.Age(now).Truncate(time.Second).String()
		}
		out[b.Queue] = c
	}
	return out, nil
}
