package encrypt

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"

	"github.com/backwave/backwave/store"
)

// RotateResult reports a Rotate over every channel.
type RotateResult struct {
	// Rewritten counts the values rewritten under the current key: sealed
	// under an older key, or plaintext from before encryption was turned
	// on.
	Rewritten int
	// Current counts the values already under the current key.
	Current int
	// Changed counts the values that changed between the read and the
	// rewrite (a template replaced, an entry trimmed, a job purged), left
	// to whoever changed them.
	Changed int
	// Unreadable counts the values that do not open (a purged key, a
	// tampered or moved ciphertext), left as they are: their jobs are
	// Quarantined at claim.
	Unreadable int
}

// Rotate re-encrypts, under the provider's current key, every stored value
// of every user-data channel that is not under it yet: values sealed under
// an older key (which the provider must still hold) and plaintext values
// written before encryption was turned on. It reads and rewrites batch
// values at a time, each rewrite a compare-and-swap on the value
// (store.Rewriter), so it runs while workers claim and report: a value
// that changed meanwhile is left alone, and nothing a running job writes
// is lost. A job payload minted from a schedule template is rewritten
// bound to the job itself. s is the store Wrap returned, or the store under
// it; it must have store.Rewriter. Running it again after an interruption
// picks up where the rows say.
func Rotate(ctx context.Context, s store.Store, provider KeyProvider, batch int) (RotateResult, error) {
	if w, ok := s.(wrapped); ok {
		s = w.unwrapped()
	}
	if provider == nil {
		return RotateResult{}, fmt.Errorf("encrypt: rotate: %w", ErrNoKeyProvider)
	}
	if batch < 1 {
		return RotateResult{}, fmt.Errorf("encrypt: rotate: %w: batch %d is below 1", store.ErrInvalidParams, batch)
	}
	rw, ok := s.(store.Rewriter)
	if !ok {
		return RotateResult{}, fmt.Errorf("encrypt: rotate: the store (%T) has no raw rewrite capability (store.Rewriter)", s)
	}
	r := rotation{s: s, rw: rw, keys: &keys{provider: provider, aeads: make(map[string]cipher.AEAD)}, batch: batch}
	cur, err := r.keys.current(ctx)
	if err != nil {
		return RotateResult{}, fmt.Errorf("encrypt: rotate: %w", err)
	}
	r.cur = cur
	for _, ch := range []store.Channel{store.ChannelTemplate, store.ChannelPayload, store.ChannelOutput, store.ChannelFailureDetail} {
		if err := r.channel(ctx, ch); err != nil {
			return r.res, fmt.Errorf("encrypt: rotate %s: %w", ch, err)
		}
	}
	return r.res, nil
}

type rotation struct {
	s     store.Store
	rw    store.Rewriter
	keys  *keys
	cur   sealer
	batch int
	res   RotateResult
}

// channel rotates every value of one channel, a batch at a time.
func (r *rotation) channel(ctx context.Context, ch store.Channel) error {
	var after store.RawKey
	for {
		vals, err := r.rw.RawScan(ctx, store.RawScanParams{Channel: ch, After: after, Limit: r.batch})
		if err != nil {
			return err
		}
		var swaps []store.RawSwap
		for _, v := range vals {
			after = v.Key
			next, err := r.reseal(ctx, ch, v)
			switch {
			case isUndecryptable(err):
				r.res.Unreadable++
			case err != nil:
				return err
			case next == nil:
				r.res.Current++
			default:
				swaps = append(swaps, store.RawSwap{Key: v.Key, Old: v.Value, New: next})
			}
		}
		if len(swaps) > 0 {
			done, err := r.rw.RawRewrite(ctx, store.RawRewriteParams{Channel: ch, Swaps: swaps})
			if err != nil {
				return err
			}
			for _, ok := range done {
				if ok {
					r.res.Rewritten++
				} else {
					r.res.Changed++
				}
			}
		}
		if len(vals) < r.batch {
			return nil
		}
	}
}

// reseal returns the value v becomes under the current key, or nil if it
// is under it already.
func (r *rotation) reseal(ctx context.Context, ch store.Channel, v store.RawValue) ([]byte, error) {
	text := ch == store.ChannelFailureDetail
	row := jobBound(v.Key.Job)
	if ch == store.ChannelTemplate {
		row = scheduleBound(v.Key.Schedule)
	}
	if id, sealed := keyIDOf(v.Value, text); sealed && id == r.cur.keyID && (ch != store.ChannelPayload || !boundToSchedule(v.Value)) {
		return nil, nil
	}
	plain := v.Value
	switch {
	case text && SealedText(string(v.Value)):
		s, _, err := r.keys.openText(ctx, string(v.Value), ch, row)
		if err != nil {
			return nil, err
		}
		plain = []byte(s)
	case !text && Sealed(v.Value):
		from, err := r.bound(ctx, ch, v)
		if err != nil {
			return nil, err
		}
		openCh := ch
		if from.binding == bindSchedule {
			openCh = store.ChannelTemplate
		}
		if plain, _, err = r.keys.open(ctx, v.Value, openCh, from); err != nil {
			return nil, err
		}
	}
	if text {
		s, err := r.cur.sealText(ch, row, string(plain))
		return []byte(s), err
	}
	return r.cur.seal(ch, row, plain)
}

// bound returns the row a sealed value of ch was bound to: a payload
// minted from a template is bound to its schedule, named by the job's Tag.
func (r *rotation) bound(ctx context.Context, ch store.Channel, v store.RawValue) (bound, error) {
	switch {
	case ch == store.ChannelTemplate:
		return scheduleBound(v.Key.Schedule), nil
	case ch == store.ChannelPayload && boundToSchedule(v.Value):
		j, err := r.s.JobGet(ctx, v.Key.Job)
		if errors.Is(err, store.ErrNotFound) {
			return jobBound(v.Key.Job), nil // purged meanwhile: the swap will find nothing
		}
		if err != nil {
			return bound{}, err
		}
		return payloadBound(&j, v.Value), nil
	}
	return jobBound(v.Key.Job), nil
}

// boundToSchedule reports whether an envelope is bound to a schedule.
func boundToSchedule(env []byte) bool {
	h, err := parse(env)
	return err == nil && h.binding == bindSchedule
}
