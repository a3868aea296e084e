package encrypt

import (
	"context"
	"crypto/cipher"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// Options tune Wrap. The zero value is ready.
type Options struct {
	// Logger receives what the store cannot say through a result: a job
	// Quarantined at claim because its payload does not decrypt, and a
	// failed attempt to record that (slog.Default() if nil).
	Logger *slog.Logger
	// RejectPlaintext refuses a payload or Job Output stored without an
	// envelope, as if it did not decrypt: a job carrying one is
	// Quarantined at its claim. Set it once Rotate has sealed every row
	// written before encryption was turned on, so that no one with write
	// access to the database can plant a plaintext payload.
	RejectPlaintext bool
}

// Wrap returns s with Encryption at Rest: every user-data channel written
// through it — job payloads (JobInsertMany, JobInsertManyResults and, where
// s has it, JobInsertManyInTx), Recurring Schedule templates
// (ScheduleUpsert), Job Output and Failure Detail (OutcomeReport) — is
// stored as an AES-256-GCM envelope under the key provider's current key,
// and every read opens it again. It fails closed: without a key provider,
// or with one whose current key cannot be had, it returns an error and no
// store, so nothing is ever written in plaintext by mistake. ctx bounds
// the key provider's first answer (a key management service may be
// remote).
//
// The wrapped store has the optional capabilities s has — Wake-Up Hints
// (store.HintSource), its own clock (store.ClockSource), Transactional
// Enqueue (store.TxInserter) — and no others: it never claims one it cannot
// honour. It does not offer store.Rewriter, the raw bytes; Rotate reaches
// them through it.
func Wrap(ctx context.Context, s store.Store, keys KeyProvider) (store.Store, error) {
	return WrapWith(ctx, s, keys, Options{})
}

// WrapWith is Wrap with Options.
func WrapWith(ctx context.Context, s store.Store, provider KeyProvider, o Options) (store.Store, error) {
	if s == nil {
		return nil, fmt.Errorf("encrypt: wrap: no store")
	}
	if _, ok := s.(wrapped); ok {
		return nil, fmt.Errorf("encrypt: wrap: the store is encrypted already")
	}
	if provider == nil {
		return nil, fmt.Errorf("encrypt: wrap: %w: Encryption at Rest needs a key provider; refusing to start rather than store plaintext", ErrNoKeyProvider)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &base{Store: s, keys: &keys{provider: provider, aeads: make(map[string]cipher.AEAD)}, log: o.Logger,
		rejectPlaintext: o.RejectPlaintext}
	if _, err := b.keys.current(ctx); err != nil {
		return nil, fmt.Errorf("encrypt: wrap: the current key is unusable; refusing to start rather than store plaintext: %w", err)
	}
	h, hasHints := s.(store.HintSource)
	c, hasClock := s.(store.ClockSource)
	_, hasTx := s.(store.TxInserter)
	hm, cm, tm := hints{h}, clock{c}, txInsert{b}
	switch {
	case hasHints && hasClock && hasTx:
		return &struct {
			*base
			hints
			clock
			txInsert
		}{b, hm, cm, tm}, nil
	case hasHints && hasClock:
		return &struct {
			*base
			hints
			clock
		}{b, hm, cm}, nil
	case hasHints && hasTx:
		return &struct {
			*base
			hints
			txInsert
		}{b, hm, tm}, nil
	case hasClock && hasTx:
		return &struct {
			*base
			clock
			txInsert
		}{b, cm, tm}, nil
	case hasHints:
		return &struct {
			*base
			hints
		}{b, hm}, nil
	case hasClock:
		return &struct {
			*base
			clock
		}{b, cm}, nil
	case hasTx:
		return &struct {
			*base
			txInsert
		}{b, tm}, nil
	}
	return b, nil
}

// base is the wrapped store. The embedded Store forwards every call that
// moves no user data (Queue settings, counts, Tags, leases, retention, …);
// the methods of base override every one that does. TestEveryMethodSorted
// fails when the Storage Contract grows a method nobody has sorted.
type base struct {
	store.Store
	keys            *keys
	log             *slog.Logger
	rejectPlaintext bool
}

// unwrapped returns the store under the encryption, for Rotate.
func (b *base) unwrapped() store.Store { return b.Store }

// wrapped is implemented by every store Wrap returns.
type wrapped interface{ unwrapped() store.Store }

type hints struct{ h store.HintSource }

// SubscribeHints forwards to the wrapped store's Wake-Up Hints.
func (m hints) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	return m.h.SubscribeHints(fn)
}

type clock struct{ c store.ClockSource }

// Clock returns the wrapped store's clock.
func (m clock) Clock() vtime.Clock { return m.c.Clock() }

type txInsert struct{ b *base }
