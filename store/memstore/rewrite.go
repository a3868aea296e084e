package memstore

import (
	"bytes"
	"context"
	"slices"

	"github.com/backwave/backwave/store"
)

var _ store.Rewriter = (*Store)(nil)

// RawScan reads up to p.Limit stored values of p.Channel after p.After, in
// key order. A Failure Detail's entry key is its place in the job's
// Transition Log, counted from 1.
func (s *Store) RawScan(ctx context.Context, p store.RawScanParams) ([]store.RawValue, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.RawValue
	if p.Channel == store.ChannelTemplate {
		names := make([]string, 0, len(s.schedules))
		for name, sc := range s.schedules {
			if name > p.After.Schedule && sc.s.Template.Payload != nil {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names[:min(len(names), p.Limit)] {
			out = append(out, store.RawValue{Key: store.RawKey{Schedule: name}, Value: bytes.Clone(s.schedules[name].s.Template.Payload)})
		}
		return out, nil
	}
	for _, r := range s.jobs {
		if len(out) >= p.Limit {
			break
		}
		if r == nil || r.job.ID < p.After.Job {
			continue
		}
		switch p.Channel {
		case store.ChannelPayload, store.ChannelOutput:
			v := r.job.Payload
			if p.Channel == store.ChannelOutput {
				v = r.output
			}
			if r.job.ID > p.After.Job && v != nil {
				out = append(out, store.RawValue{Key: store.RawKey{Job: r.job.ID}, Value: bytes.Clone(v)})
			}
		case store.ChannelFailureDetail:
			for i, t := range r.log {
				k := store.RawKey{Job: r.job.ID, Entry: int64(i + 1)}
				if t.FailureDetail != "" && p.After.Less(k) && len(out) < p.Limit {
					out = append(out, store.RawValue{Key: k, Value: []byte(t.FailureDetail)})
				}
			}
		}
	}
	return out, nil
}

// RawRewrite applies each swap whose value still equals its Old.
func (s *Store) RawRewrite(ctx context.Context, p store.RawRewriteParams) ([]bool, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]bool, len(p.Swaps))
	for i, sw := range p.Swaps {
		out[i] = s.swap(p.Channel, sw)
	}
	return out, nil
}

// swap applies one swap if its value still equals sw.Old. The caller holds
// s.mu.
func (s *Store) swap(c store.Channel, sw store.RawSwap) bool {
	if c == store.ChannelTemplate {
		sc, ok := s.schedules[sw.Key.Schedule]
		if !ok || sc.s.Template.Payload == nil || !bytes.Equal(sc.s.Template.Payload, sw.Old) {
			return false
		}
		sc.s.Template.Payload = bytes.Clone(sw.New)
		return true
	}
	r := s.row(sw.Key.Job)
	if r == nil {
		return false
	}
	var v *[]byte
	switch c {
	case store.ChannelPayload:
		v = &r.job.Payload
	case store.ChannelOutput:
		v = &r.output
	case store.ChannelFailureDetail:
		i := sw.Key.Entry - 1
		if i < 0 || i >= int64(len(r.log)) || r.log[i].FailureDetail == "" || r.log[i].FailureDetail != string(sw.Old) {
			return false
		}
		r.log[i].FailureDetail = string(sw.New)
		return true
	default:
		return false
	}
	if *v == nil || !bytes.Equal(*v, sw.Old) {
		return false
	}
	*v = bytes.Clone(sw.New)
	return true
}
