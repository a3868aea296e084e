package store

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxConcurrencyKeyBytes bounds a Concurrency Key: at most 128 bytes of
// UTF-8 (what every adapter indexes beside the Queue name).
const MaxConcurrencyKeyBytes = 128

// MaxKeyLimit is the largest Key Limit a KeyPolicy may have (what every
// adapter stores as a 32-bit count).
const MaxKeyLimit = 1<<31 - 1

// ValidateConcurrencyKey checks a job's Concurrency Key: empty is no key;
// otherwise valid UTF-8 of at most MaxConcurrencyKeyBytes bytes with no
// control character. An error wraps ErrInvalidParams.
func ValidateConcurrencyKey(key string) error {
	switch {
	case key == "":
		return nil
	case len(key) > MaxConcurrencyKeyBytes:
		return fmt.Errorf("%w: concurrency key of %d bytes is over the %d-byte limit", ErrInvalidParams, len(key), MaxConcurrencyKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: concurrency key %q is not valid UTF-8", ErrInvalidParams, key)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: concurrency key %q holds a control character", ErrInvalidParams, key)
		}
	}
	return nil
}

// KeyPolicy is a Queue's policy over the Concurrency Keys of its jobs. The
// zero KeyPolicy is none: the Queue's jobs are claimed as if they carried
// no key.
//
// The rule, written once for every adapter (KeyPolicy.Pick applies it):
//
//   - Key Limit: at most Limit jobs of one key are Running in the Queue at
//     once, counted across every worker on every node. A job leaves its
//     key's count exactly when it leaves Running (an applied outcome, an
//     expired or relinquished Lease, an operator cancel): the same fence as
//     the Queue's Concurrency Limit slot.
//   - Key Rate: at most Rate.Limit jobs of one key start per window of
//     Rate.Period, by the Rate Limit's window rule (QueueRate.Budget) kept
//     per key.
//   - Fair Claim: a claim takes the Queue's due jobs round-robin across
//     keys instead of in plain due order, and the rotation carries from
//     one claim to the next. Keys take turns least recently served first
//     (the Queue numbers every job a Fair Claim takes as one turn; a key
//     never served goes first, ties by the key's earliest due job, due
//     time then id); each turn takes a key's next job in due order; a key
//     with nothing left, or held by its Key Limit or Key Rate, loses its
//     turns for the rest of the claim.
//
// Jobs without a key form one key of their own for Fair Claim (the empty
// key takes its turn like any other); the Key Limit and the Key Rate bind
// only jobs that carry a key. All three apply inside what the Queue's own
// Concurrency Limit, Rate Limit and the claim's batch allow: both the
// Queue's limits and the key's hold. A job a key's limit holds back is
// passed over, not waited on: the claim goes on to other keys' jobs.
//
// Every count is exact under any number of concurrent claimers: claims
// that may take from a Queue with a KeyPolicy are serialized on that
// Queue, as for a Rate Limit, and a key's counters change in the same
// atomic step as the claim or the transition that moves its job.
type KeyPolicy struct {
	// Limit is the Key Limit: 1 to MaxKeyLimit, and not above the Queue's
	// Concurrency Limit when it has one; 0 is none.
	Limit int
	// Rate is the Key Rate; the zero QueueRate is none.
	Rate QueueRate
	// Fair turns Fair Claim on.
	Fair bool
}

// IsZero reports whether p is no key policy.
func (p KeyPolicy) IsZero() bool { return p == KeyPolicy{} }

// Validate checks p on its own: a Limit of 0 (none) or 1 to MaxKeyLimit and
// a valid Rate. ValidateLimit checks the Limit against the Queue's.
func (p KeyPolicy) Validate() error {
	if p.Limit < 0 || p.Limit > MaxKeyLimit {
		return fmt.Errorf("%w: key limit %d (want 1 to %d, or 0 for none)", ErrInvalidParams, p.Limit, MaxKeyLimit)
	}
	if err := p.Rate.Validate(); err != nil {
		return fmt.Errorf("key %w", err)
	}
	return nil
}

// ValidateKeyLimit checks a Key Limit against the Queue's Concurrency Limit
// (0: none): a Key Limit above it could never be reached, so it is refused
// rather than stored as a promise the Queue breaks. A store applies it when
// the Key Limit is set, atomically with the write; a Concurrency Limit set
// lower later is allowed, and then both hold.
func ValidateKeyLimit(keyLimit, queueLimit int) error {
	if keyLimit > 0 && queueLimit > 0 && keyLimit > queueLimit {
		return fmt.Errorf("%w: key limit %d is above the queue's concurrency limit %d", ErrInvalidParams, keyLimit, queueLimit)
	}
	return nil
}

// String renders the policy, e.g. "key limit 2, key rate 10/1m0s, fair",
// or "none".
func (p KeyPolicy) String() string {
	if p.IsZero() {
		return "none"
	}
	s := ""
	add := func(part string) {
		if s != "" {
			s += ", "
		}
		s += part
	}
	if p.Limit > 0 {
		add("key limit " + strconv.Itoa(p.Limit))
	}
	if !p.Rate.IsZero() {
		add("key rate " + p.Rate.String())
	}
	if p.Fair {
		add("fair")
	}
	return s
}

// KeyStanding is what a store keeps per (Queue, key) for the claim: the
// key's Running count (for the Key Limit), the Key Rate window it last
// counted starts in (zero if none) with that window's count, and the Fair
// Claim turn of the last claim that took one of its jobs (0 if none).
type KeyStanding struct {
	Running int
	Window  time.Time
	Count   int
	Turn    int64
}

// KeyTaken is what a claim records for one key it took jobs of: the Key
// Rate window and its new count (zero without a Key Rate), and the key's
// Fair Claim turn (0, left as it was, without Fair Claim).
type KeyTaken struct {
	Window time.Time
	Count  int
	Turn   int64
}

// KeyPick is what KeyPolicy.Pick decides for one Queue in one claim.
type KeyPick struct {
	// Take are indexes into the due keys Pick was given, in claim order.
	Take []int
	// Taken holds, for each key the claim took jobs of, what to record of
	// it, when there is anything (a Key Rate or Fair Claim); nil otherwise.
	Taken map[string]KeyTaken
	// Turn is the Queue's last Fair Claim turn after this claim, to record;
	// the turn Pick was given if it took nothing or Fair Claim is off.
	Turn int64
	// Reopen is the earliest end of a Key Rate window that held back a due
	// job while the claim still had room; zero if none. It joins the
	// claim's ClaimParams.Reopen.
	Reopen time.Time
}

// Pick applies p to one Queue's claim at now, the store's clock: due are
// the Concurrency Keys ("" for none) of the Queue's claimable jobs in due
// order (due time, then id), room is how many the Queue may still yield
// (the batch, its Concurrency Limit and its Rate Limit already applied),
// standing is each key's KeyStanding (a missing key stands at zero) and
// turn the Queue's last Fair Claim turn (0 if none). An adapter may cut due
// to each key's first room jobs: the pick is the same. With the zero
// KeyPolicy, Pick takes the first room jobs.
//
// Fair Claim's turns: every job a Fair Claim takes is one turn of its
// Queue, numbered on from turn, and its key records the number. Keys take
// turns least recently served first — by the turn they last recorded, a
// key never served (turn 0) first of all, ties by their earliest due job —
// so rotation carries across claims: a claim of one job serves a key that
// has waited, not the flooding key again.
func (p KeyPolicy) Pick(due []string, room int, standing map[string]KeyStanding, turn int64, now time.Time) KeyPick {
	pick := KeyPick{Turn: turn}
	if room <= 0 {
		return pick
	}
	allow := map[string]int{} // what each key may still take; absent: not yet read
	windows := map[string]time.Time{}
	byRate := map[string]bool{} // the key's allowance is its Key Rate's
	allowance := func(key string) int {
		if a, ok := allow[key]; ok {
			return a
		}
		a := room
		if key != "" {
			st := standing[key]
			if p.Limit > 0 {
				a = min(a, max(0, p.Limit-st.Running))
			}
			if !p.Rate.IsZero() {
				budget, window := p.Rate.Budget(st.Window, st.Count, now)
				windows[key] = window
				if budget <= a {
					a, byRate[key] = budget, true
				}
			}
		}
		allow[key] = a
		return a
	}
	withheld := func(key string) {
		if !byRate[key] {
			return
		}
		if ends := windows[key].Add(p.Rate.Period); pick.Reopen.IsZero() || ends.Before(pick.Reopen) {
			pick.Reopen = ends
		}
	}
	take := func(i int) {
		key := due[i]
		pick.Take = append(pick.Take, i)
		allow[key]--
		room--
		w, rated := windows[key]
		if !rated && !p.Fair {
			return
		}
		if pick.Taken == nil {
			pick.Taken = map[string]KeyTaken{}
		}
		t, ok := pick.Taken[key]
		if !ok {
			t = KeyTaken{Turn: standing[key].Turn}
			if rated {
				t.Window, t.Count = w, countIn(standing[key], w)
			}
		}
		if rated {
			t.Count++
		}
		if p.Fair {
			pick.Turn++
			t.Turn = pick.Turn
		}
		pick.Taken[key] = t
	}
	if !p.Fair {
		for i, key := range due {
			if room == 0 {
				break
			}
			if allowance(key) > 0 {
				take(i)
			} else {
				withheld(key)
			}
		}
		return pick
	}
	// Fair Claim: keys least recently served first (ties by their
	// earliest due job, the order due first names them in), each with its
	// jobs in due order.
	var order []string
	jobs := map[string][]int{}
	for i, key := range due {
		if _, ok := jobs[key]; !ok {
			order = append(order, key)
		}
		jobs[key] = append(jobs[key], i)
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(standing[a].Turn, standing[b].Turn) })
	for room > 0 && len(order) > 0 {
		live := order[:0]
		for _, key := range order {
			if room == 0 {
				live = append(live, key)
				continue
			}
			if allowance(key) == 0 {
				withheld(key)
				continue
			}
			take(jobs[key][0])
			if jobs[key] = jobs[key][1:]; len(jobs[key]) > 0 {
				live = append(live, key)
			}
		}
		order = live
	}
	return pick
}

// countIn is how many starts a key's standing counted in window: its count
// if it is that window, else none (a later window starts afresh).
func countIn(st KeyStanding, window time.Time) int {
	if st.Window.Equal(window) {
		return st.Count
	}
	return 0
}

// QueueSetKeyLimitParams are the params of Queues.QueueSetKeyLimit.
type QueueSetKeyLimitParams struct {
	Queue string
	// Limit is the Key Limit: 1 to MaxKeyLimit, at most the Queue's
	// Concurrency Limit if it has one; 0 removes it.
	Limit int
	// Actor is recorded in the audit trail; empty means ActorSystem.
	Actor Actor
}

// Validate checks the params of QueueSetKeyLimit (the store checks the
// Limit against the Queue's, ValidateKeyLimit).
func (p QueueSetKeyLimitParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if err := p.Actor.Validate(); err != nil {
		return err
	}
	return KeyPolicy{Limit: p.Limit}.Validate()
}

// QueueSetKeyRateParams are the params of Queues.QueueSetKeyRate.
type QueueSetKeyRateParams struct {
	Queue string
	// Rate is the Key Rate; the zero QueueRate removes it.
	Rate QueueRate
	// Actor is recorded in the audit trail; empty means ActorSystem.
	Actor Actor
}

// Validate checks the params of QueueSetKeyRate.
func (p QueueSetKeyRateParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if err := p.Actor.Validate(); err != nil {
		return err
	}
	return KeyPolicy{Rate: p.Rate}.Validate()
}

// QueueSetFairClaimParams are the params of Queues.QueueSetFairClaim.
type QueueSetFairClaimParams struct {
	Queue string
	// Fair turns Fair Claim on (true) or off.
	Fair bool
	// Actor is recorded in the audit trail; empty means ActorSystem.
	Actor Actor
}

// Validate checks the params of QueueSetFairClaim.
func (p QueueSetFairClaimParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	return p.Actor.Validate()
}

// KeyLimitDetail is the Detail of setting a Key Limit, e.g. "key limit 2"
// or "key limit none".
func KeyLimitDetail(limit int) string {
	if limit == 0 {
		return "key limit none"
	}
	return "key limit " + strconv.Itoa(limit)
}

// KeyRateDetail is the Detail of setting a Key Rate, e.g. "key rate 10/1m0s".
func KeyRateDetail(r QueueRate) string { return "key rate " + r.String() }

// FairClaimDetail is the Detail of setting Fair Claim: "fair claim on" or
// "fair claim off".
func FairClaimDetail(fair bool) string {
	if fair {
		return "fair claim on"
	}
	return "fair claim off"
}

// QueueKeysParams are the params of Monitor.QueueKeys.
type QueueKeysParams struct {
	Queue string
	// Limit is how many keys to return; 0 means DefaultQueueKeys, at most
	// MaxQueueKeys.
	Limit int
}

// Bounds of QueueKeysParams.Limit.
const (
	DefaultQueueKeys = 10
	MaxQueueKeys     = 100
)

// Validate checks the params of QueueKeys.
func (p QueueKeysParams) Validate() error {
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if p.Limit < 0 || p.Limit > MaxQueueKeys {
		return fmt.Errorf("%w: queue keys limit %d (want 0 to %d)", ErrInvalidParams, p.Limit, MaxQueueKeys)
	}
	return nil
}

// KeyLimit returns the number of keys to return: Limit, or DefaultQueueKeys.
func (p QueueKeysParams) KeyLimit() int {
	if p.Limit == 0 {
		return DefaultQueueKeys
	}
	return p.Limit
}

// KeyCount is one Concurrency Key of a Queue with its live jobs.
type KeyCount struct {
	// Key is the Concurrency Key; "" stands for the Queue's jobs without one.
	Key string
	// Scheduled counts the key's Scheduled jobs, due or not yet due.
	Scheduled int
	// Running counts the key's Running jobs.
	Running int
}

// SortKeyCounts orders key counts as QueueKeys returns them: most
// Scheduled and Running jobs together first, ties by key.
func SortKeyCounts(c []KeyCount) {
	slices.SortFunc(c, func(a, b KeyCount) int {
		if n := cmp.Compare(b.Scheduled+b.Running, a.Scheduled+a.Running); n != 0 {
			return n
		}
		return cmp.Compare(a.Key, b.Key)
	})
}
