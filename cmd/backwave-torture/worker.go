package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/cmd/backwave-torture/journal"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// journalStore is the Storage Contract as a worker process sees it: every
// call passes to the real store, and what the store answered to claims,
// renewals, outcome reports and Relinquishes is journaled, after the answer
// arrives. It keeps the wrapped store's Wake-Up Hints.
type journalStore struct {
	store.Store
	j     *journal.Writer
	plant string
	// second is a second store (its own connections) through which the
	// double-apply plant sends an outcome again.
	second  store.Store
	applied atomic.Int64
}

// SubscribeHints passes the wrapped store's Wake-Up Hints through.
func (s *journalStore) SubscribeHints(fn func(queue string)) func() {
	if h, ok := s.Store.(store.HintSource); ok {
		return h.SubscribeHints(fn)
	}
	return func() {}
}

// JobClaim journals every Attempt the store leased.
func (s *journalStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	jobs, err := s.Store.JobClaim(ctx, p)
	for _, j := range jobs {
		s.j.Write(journal.Entry{Kind: journal.KindClaim, W: string(p.Worker), ID: int64(j.ID), A: int64(j.Attempt), Q: j.Queue})
	}
	return jobs, err
}

// LeaseRenew journals every Lease the store said was lost.
func (s *journalStore) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	res, err := s.Store.LeaseRenew(ctx, p)
	if err == nil {
		for _, r := range res {
			if r.Status == store.RenewLost {
				s.j.Write(journal.Entry{Kind: journal.KindRenewLost, W: string(p.Worker), ID: int64(r.Lease.ID), A: int64(r.Lease.Attempt)})
			}
		}
	}
	return res, err
}

// OutcomeReport journals each outcome with the store's answer. Under the
// double-apply plant every 25th applied outcome is sent again through a
// second connection and journaled applied whatever the store answered;
// under the skip-fence plant one applied outcome is journaled under a
// worker id that never held the Lease.
func (s *journalStore) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	res, err := s.Store.OutcomeReport(ctx, p)
	if err != nil {
		return res, err
	}
	for i, r := range res {
		if i >= len(p.Outcomes) {
			break
		}
		o := p.Outcomes[i]
		w := string(p.Worker)
		n := int64(0)
		if r.Applied {
			n = s.applied.Add(1)
		}
		if s.plant == plantSkipFence && n == 10 {
			w += "-not-the-holder"
		}
		s.j.Write(journal.Entry{Kind: journal.KindReport, W: w, ID: int64(o.Lease.ID), A: int64(o.Lease.Attempt), State: o.State.String(), Applied: r.Applied})
		if s.plant == plantDoubleApply && r.Applied && n%25 == 0 && s.second != nil {
			again, err := s.second.OutcomeReport(ctx, store.ReportParams{Worker: p.Worker, Outcomes: []store.Outcome{o}})
			detail := fmt.Sprintf("planted: sent again through a second connection; store answered %v", err)
			if err == nil && len(again) == 1 {
				detail = fmt.Sprintf("planted: sent again through a second connection; store answered applied=%v", again[0].Applied)
			}
			s.j.Write(journal.Entry{Kind: journal.KindReport, W: string(p.Worker), ID: int64(o.Lease.ID), A: int64(o.Lease.Attempt), State: o.State.String(), Applied: true, Detail: detail})
		}
	}
	return res, err
}

// LeaseRelinquish journals how many Leases were handed back.
func (s *journalStore) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	res, err := s.Store.LeaseRelinquish(ctx, p)
	s.j.Write(journal.Entry{Kind: journal.KindOperator, Note: "relinquish", W: string(p.Worker), N: int64(len(p.Leases)), Applied: err == nil})
	return res, err
}

// runWorker runs one worker process: a Client with one Worker Group over
// every Queue, whose handler journals each start and finish.
func runWorker(ctx context.Context, cfg childConfig, j *journal.Writer) error {
	s, err := openStore(ctx, cfg.URI)
	if err != nil {
		return err
	}
	js := &journalStore{Store: s, j: j, plant: cfg.Plant}
	if cfg.Plant == plantDoubleApply {
		if js.second, err = openStore(ctx, cfg.URI); err != nil {
			return err
		}
		defer js.second.Close()
	}
	h := backwave.NewHandlers()
	err = backwave.AddHandlerFunc(h, func(ctx context.Context, jb *backwave.Job[workArgs]) error {
		j.Write(journal.Entry{Kind: journal.KindStart, ID: int64(jb.ID), A: int64(jb.Attempt), Q: jb.Queue})
		result, herr := "ok", error(nil)
		switch {
		case !sleepCtx(ctx, time.Duration(jb.Args.Ms)*time.Millisecond):
			result, herr = "fail", fmt.Errorf("attempt %d: %w", jb.Attempt, context.Cause(ctx))
		case jb.Args.P:
			result, herr = "perm", backwave.FailPermanently(errors.New("planned permanent failure"))
		case int(jb.Attempt) <= jb.Args.F:
			result, herr = "fail", fmt.Errorf("planned failure of attempt %d", jb.Attempt)
		}
		j.Write(journal.Entry{Kind: journal.KindFinish, ID: int64(jb.ID), A: int64(jb.Attempt), State: result})
		return herr
	})
	if err != nil {
		return fmt.Errorf("handler: %w", err)
	}
	g := backwave.DefaultWorkerGroup("g", backwave.Strict(queues...))
	g.PoolSize = cfg.Group.Pool
	g.MaxClaimBatch = cfg.Group.Pool
	g.LeaseDuration = cfg.Group.Lease
	g.HeartbeatInterval = cfg.Group.Heartbeat
	g.PollInterval = cfg.Group.Poll
	g.MaintenanceInterval = cfg.Group.Maintenance
	c, err := backwave.NewClient(js, backwave.Config{
		Handlers: h, NodeID: cfg.Name, Logger: quietLogger(),
		Groups:      []backwave.WorkerGroupOptions{g},
		RetryPolicy: backwave.RetryPolicy{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2},
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Println("ready")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Stop(stopCtx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return s.Close()
}
