package encrypt

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testRing(t *testing.T, current string, ids ...string) *KeyRing {
	t.Helper()
	m := make(map[string][]byte)
	for _, id := range append([]string{current}, ids...) {
		k := make([]byte, KeySize)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		m[id] = k
	}
	r, err := NewKeyRing(current, m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEnvelopeBinding shows the additional data biting (glossary,
// Encryption at Rest: "the job id and column bound in as additional data
// so a ciphertext cannot be moved to another row"): an envelope opens only
// in the row and column it was sealed for, and any changed byte — header,
// nonce or ciphertext — makes it fail.
func TestEnvelopeBinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := &keys{provider: testRing(t, "k1"), aeads: map[string]cipher.AEAD{}}
	s, err := k.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"card":"4111"}`)
	env, err := s.seal(store.ChannelPayload, jobBound(7), secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(env, secret) || !Sealed(env) {
		t.Fatalf("envelope %q holds the plaintext or lacks the marker", env)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(env)
		c[i] ^= 0x01
		return c
	}
	tmpl, err := s.seal(store.ChannelTemplate, scheduleBound("nightly"), secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []byte
		ch   store.Channel
		row  bound
		ok   bool
	}{
		{"same row and column", env, store.ChannelPayload, jobBound(7), true},
		{"another job", env, store.ChannelPayload, jobBound(8), false},
		{"another column", env, store.ChannelOutput, jobBound(7), false},
		{"read as a template", env, store.ChannelTemplate, scheduleBound("nightly"), false},
		{"key id byte changed", flip(len(magic) + 3), store.ChannelPayload, jobBound(7), false},
		{"nonce changed", flip(len(magic) + 3 + 2), store.ChannelPayload, jobBound(7), false},
		{"ciphertext changed", flip(len(env) - 20), store.ChannelPayload, jobBound(7), false},
		{"tag changed", flip(len(env) - 1), store.ChannelPayload, jobBound(7), false},
		{"truncated", env[:len(env)-1], store.ChannelPayload, jobBound(7), false},
		{"template in its schedule", tmpl, store.ChannelTemplate, scheduleBound("nightly"), true},
		{"template in another schedule", tmpl, store.ChannelTemplate, scheduleBound("hourly"), false},
		{"template read as a job payload", tmpl, store.ChannelPayload, jobBound(7), false},
		{"the insert placeholder", unsealedPlaceholder, store.ChannelPayload, jobBound(7), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, id, err := k.open(ctx, tc.env, tc.ch, tc.row)
			switch {
			case tc.ok && (err != nil || !bytes.Equal(got, secret) || id != "k1"):
				t.Fatalf("open = %q, %q, %v; want the plaintext under k1", got, id, err)
			case !tc.ok && !errors.Is(err, ErrUndecryptable):
				t.Fatalf("open = %q, %v; want an error wrapping ErrUndecryptable", got, err)
			}
		})
	}
}

// TestOpenNeedsItsKey: a row sealed under a key the provider no longer
// holds does not open, and says which key is missing.
func TestOpenNeedsItsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := testRing(t, "k1")
	k := &keys{provider: old, aeads: map[string]cipher.AEAD{}}
	s, err := k.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env, err := s.seal(store.ChannelOutput, jobBound(1), []byte("out"))
	if err != nil {
		t.Fatal(err)
	}
	k2 := &keys{provider: testRing(t, "k2"), aeads: map[string]cipher.AEAD{}}
	if _, _, err := k2.open(ctx, env, store.ChannelOutput, jobBound(1)); !errors.Is(err, ErrUndecryptable) || !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("open under a ring without k1 = %v; want ErrUndecryptable and ErrKeyNotFound", err)
	}
}

// TestParseKeyRing reads the text form and rejects what it cannot use.
func TestParseKeyRing(t *testing.T) {
	t.Parallel()
	const k32 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	for _, tc := range []struct {
		text    string
		current string
		err     error
	}{
		{"k2=" + k32 + ",k1=" + k32, "k2", nil},
		{" k1=" + k32 + " ", "k1", nil},
		{"", "", ErrInvalidKey},
		{"k1", "", ErrInvalidKey},
		{"k1=AAEC", "", ErrInvalidKey},
		{"k1=" + k32 + ",k1=" + k32, "", ErrInvalidKey},
		{"bad id=" + k32, "", ErrInvalidKey},
		{"k1=not base64!", "", ErrInvalidKey},
	} {
		r, err := ParseKeyRing(tc.text)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("ParseKeyRing(%q) = %v, want %v", tc.text, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseKeyRing(%q): %v", tc.text, err)
			continue
		}
		if id, _ := r.CurrentKeyID(context.Background()); id != tc.current {
			t.Errorf("ParseKeyRing(%q) current = %q, want %q", tc.text, id, tc.current)
		}
	}
}

// BenchmarkSealOpen measures one payload sealed and opened: the cost
// Encryption at Rest adds per job to an insert and a claim.
func BenchmarkSealOpen(b *testing.B) {
	ctx := context.Background()
	m := map[string][]byte{"k1": make([]byte, KeySize)}
	r, err := NewKeyRing("k1", m)
	if err != nil {
		b.Fatal(err)
	}
	k := &keys{provider: r, aeads: map[string]cipher.AEAD{}}
	for _, size := range []int{64, 1024} {
		payload := bytes.Repeat([]byte("x"), size)
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				s, err := k.current(ctx)
				if err != nil {
					b.Fatal(err)
				}
				env, err := s.seal(store.ChannelPayload, jobBound(job.ID(i+1)), payload)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := k.open(ctx, env, store.ChannelPayload, jobBound(job.ID(i+1))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
