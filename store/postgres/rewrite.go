package postgres

import (
	"context"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

var _ store.Rewriter = (*Store)(nil)

// rawScanSQL reads one page of a channel after a cursor ($1 job id, $2
// entry seq, or $1 schedule name) of at most $3 (templates: $2) rows, as
// (job id, entry, value) or (schedule, value). A Failure Detail's entry
// key is the Transition Log entry's seq.
var rawScanSQL = map[store.Channel]string{
	store.ChannelPayload: `SELECT job_id, 0::bigint, payload FROM backwave.job_payload
WHERE job_id > $1::bigint AND $2::bigint IS NOT NULL ORDER BY job_id LIMIT $3`,
	store.ChannelOutput: `SELECT id, 0::bigint, output FROM backwave.job
WHERE id > $1::bigint AND $2::bigint IS NOT NULL AND output IS NOT NULL ORDER BY id LIMIT $3`,
	store.ChannelFailureDetail: `SELECT job_id, seq, convert_to(failure_detail, 'UTF8') FROM backwave.job_transition
WHERE (job_id, seq) > ($1::bigint, $2::bigint) AND failure_detail IS NOT NULL AND failure_detail <> ''
ORDER BY job_id, seq LIMIT $3`,
	store.ChannelTemplate: `SELECT name, payload FROM backwave.schedule
WHERE name > $1::text AND payload IS NOT NULL ORDER BY name LIMIT $2`,
}

// rawSwapSQL applies a batch of compare-and-swaps in one statement over
// arrays ($1 keys, $2 entry seqs for Failure Detail, then old and new
// values) and returns the ordinal of each swap it wrote.
var rawSwapSQL = map[store.Channel]string{
	store.ChannelPayload: `UPDATE backwave.job_payload p SET payload = s.new
FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS s(id, old, new, ord)
WHERE p.job_id = s.id AND p.payload = s.old RETURNING s.ord`,
	store.ChannelOutput: `UPDATE backwave.job j SET output = s.new
FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS s(id, old, new, ord)
WHERE j.id = s.id AND j.output = s.old RETURNING s.ord`,
	store.ChannelFailureDetail: `UPDATE backwave.job_transition t SET failure_detail = convert_from(s.new, 'UTF8')
FROM unnest($1::bigint[], $2::bigint[], $3::bytea[], $4::bytea[]) WITH ORDINALITY AS s(id, seq, old, new, ord)
WHERE t.job_id = s.id AND t.seq = s.seq AND convert_to(t.failure_detail, 'UTF8') = s.old RETURNING s.ord`,
	store.ChannelTemplate: `UPDATE backwave.schedule c SET payload = s.new
FROM unnest($1::text[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS s(name, old, new, ord)
WHERE c.name = s.name AND c.payload = s.old RETURNING s.ord`,
}

// RawScan reads up to p.Limit stored values of p.Channel after p.After, in
// key order, in one statement.
func (s *Store) RawScan(ctx context.Context, p store.RawScanParams) ([]store.RawValue, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []store.RawValue
	var args []any
	if p.Channel == store.ChannelTemplate {
		args = []any{p.After.Schedule, p.Limit}
	} else {
		args = []any{int64(p.After.Job), p.After.Entry, p.Limit}
	}
	err := s.db.query(ctx, s.sql(rawScanSQL[p.Channel]), args, func(scan scanFunc) error {
		var v store.RawValue
		if p.Channel == store.ChannelTemplate {
			if err := scan(&v.Key.Schedule, &v.Value); err != nil {
				return err
			}
		} else {
			var id int64
			if err := scan(&id, &v.Key.Entry, &v.Value); err != nil {
				return err
			}
			v.Key.Job = job.ID(id)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, s.wrap("raw scan "+p.Channel.String(), err)
	}
	return out, nil
}

// RawRewrite applies each swap whose value still equals its Old, the whole
// batch in one statement.
func (s *Store) RawRewrite(ctx context.Context, p store.RawRewriteParams) ([]bool, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := make([]bool, len(p.Swaps))
	if len(p.Swaps) == 0 {
		return out, nil
	}
	n := len(p.Swaps)
	olds, news := make([][]byte, n), make([][]byte, n)
	ids, seqs, names := make([]int64, n), make([]int64, n), make([]string, n)
	for i, sw := range p.Swaps {
		olds[i], news[i] = sw.Old, sw.New
		ids[i], seqs[i], names[i] = int64(sw.Key.Job), sw.Key.Entry, sw.Key.Schedule
	}
	var args []any
	switch p.Channel {
	case store.ChannelTemplate:
		args = []any{names, olds, news}
	case store.ChannelFailureDetail:
		args = []any{ids, seqs, olds, news}
	default:
		args = []any{ids, olds, news}
	}
	err := s.db.query(ctx, s.sql(rawSwapSQL[p.Channel]), args, func(scan scanFunc) error {
		var ord int64
		if err := scan(&ord); err != nil {
			return err
		}
		if ord >= 1 && ord <= int64(n) {
			out[ord-1] = true
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("raw rewrite "+p.Channel.String(), err)
	}
	return out, nil
}
