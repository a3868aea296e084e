package encrypt

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// ErrUndecryptable: a stored value is an envelope that cannot be opened —
// its key is not held, it was tampered with, it was moved from another row
// or column, or it is malformed. The error wrapping it says which.
var ErrUndecryptable = errors.New("encrypt: stored value cannot be decrypted")

// The envelope, in the order its bytes are stored:
//
//	magic     4 bytes  "\x00BWE": no JSON or text value starts with NUL, so
//	                    a plaintext row written before encryption was turned
//	                    on reads as plaintext (no migration)
//	version   1 byte   1
//	binding   1 byte   bindJob, bindSchedule, or bindUnsealed
//	key id    1 byte length, then the id
//	nonce     12 bytes from crypto/rand
//	sealed    AES-256-GCM of the value, with its 16-byte tag
//
// The additional data is adPrefix, the header (magic to key id), the
// channel, and the binding: the job id (8 bytes, big-endian) or the
// schedule name. A ciphertext therefore opens only in the row and column it
// was sealed for, under the key id it names. A text channel (Failure
// Detail) stores textPrefix and the envelope in standard base64.
const (
	magic      = "\x00BWE"
	version1   = 1
	textPrefix = "bwenc1:"
	adPrefix   = "backwave/encrypt/v1\x00"
	nonceSize  = 12
)

// Bindings: what row a ciphertext is bound to.
const (
	// bindJob: the job id.
	bindJob byte = 1
	// bindSchedule: the schedule name; the column is ChannelTemplate. A
	// job minted from the template carries this ciphertext as its
	// payload, and opens it with its schedule Tag.
	bindSchedule byte = 2
	// bindUnsealed: the placeholder handed to a store as NewJob.Payload
	// while the real payload goes through InsertManyParams.PayloadFor. It
	// holds no data and never opens.
	bindUnsealed byte = 3
)

// unsealedPlaceholder is stored only by a store that ignores PayloadFor.
var unsealedPlaceholder = []byte(magic + "\x01\x03\x00")

// Sealed reports whether b is an envelope of Encryption at Rest (opened or
// not), as opposed to a plaintext value written before it was turned on.
func Sealed(b []byte) bool { return bytes.HasPrefix(b, []byte(magic)) }

// SealedText reports whether a text value (a Failure Detail) is an
// envelope.
func SealedText(s string) bool { return strings.HasPrefix(s, textPrefix) }

// header is an envelope's parsed header.
type header struct {
	binding byte
	keyID   string
	// n is the header's length; the nonce follows.
	n int
}

// parse reads an envelope's header. b must be Sealed.
func parse(b []byte) (header, error) {
	if len(b) < len(magic)+3 {
		return header{}, fmt.Errorf("%w: envelope of %d bytes is truncated", ErrUndecryptable, len(b))
	}
	if v := b[len(magic)]; v != version1 {
		return header{}, fmt.Errorf("%w: envelope version %d is unknown to this build", ErrUndecryptable, v)
	}
	h := header{binding: b[len(magic)+1]}
	idLen := int(b[len(magic)+2])
	h.n = len(magic) + 3 + idLen
	if h.binding == bindUnsealed {
		return h, fmt.Errorf("%w: the store kept the insert placeholder instead of the sealed payload "+
			"(it does not honour InsertManyParams.PayloadFor)", ErrUndecryptable)
	}
	if h.binding != bindJob && h.binding != bindSchedule {
		return header{}, fmt.Errorf("%w: envelope binding %d is unknown", ErrUndecryptable, h.binding)
	}
	if len(b) < h.n+nonceSize+16 {
		return header{}, fmt.Errorf("%w: envelope of %d bytes is truncated", ErrUndecryptable, len(b))
	}
	h.keyID = string(b[len(magic)+3 : h.n])
	return h, nil
}

// bound is the row a value belongs to: the job id (bindJob) or the
// schedule name (bindSchedule).
type bound struct {
	binding  byte
	job      job.ID
	schedule string
}

func jobBound(id job.ID) bound        { return bound{binding: bindJob, job: id} }
func scheduleBound(name string) bound { return bound{binding: bindSchedule, schedule: name} }

// matches reports whether an envelope of that binding may be read as b.
func (b bound) matches(binding byte) bool { return b.binding == binding }

// String names the row.
func (b bound) String() string {
	if b.binding == bindSchedule {
		return fmt.Sprintf("schedule %q", b.schedule)
	}
	return fmt.Sprintf("job %d", b.job)
}

// additionalData is what every envelope authenticates besides its value.
func additionalData(hdr []byte, ch store.Channel, b bound) []byte {
	ad := make([]byte, 0, len(adPrefix)+len(hdr)+1+8+len(b.schedule))
	ad = append(ad, adPrefix...)
	ad = append(ad, hdr...)
	ad = append(ad, byte(ch))
	if b.binding == bindSchedule {
		return append(ad, b.schedule...)
	}
	return binary.BigEndian.AppendUint64(ad, uint64(b.job))
}

// keys caches one AEAD per key the provider hands out. A key is asked of
// the provider at every use, so a purged key stops opening at once; only
// the AES key schedule is reused while the provider returns the same bytes.
type keys struct {
	provider KeyProvider
	mu       sync.Mutex
	aeads    map[string]cipher.AEAD // by key id + "\x00" + key bytes
}

// aead returns the AEAD of the key with that id.
func (k *keys) aead(ctx context.Context, id string) (cipher.AEAD, error) {
	raw, err := k.provider.Key(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", id, err)
	}
	if len(raw) != KeySize {
		return nil, fmt.Errorf("%w: key %q is %d bytes, want %d", ErrInvalidKey, id, len(raw), KeySize)
	}
	cacheKey := id + "\x00" + string(raw)
	k.mu.Lock()
	defer k.mu.Unlock()
	if a, ok := k.aeads[cacheKey]; ok {
		return a, nil
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrInvalidKey, id, err)
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrInvalidKey, id, err)
	}
	if len(k.aeads) >= 64 {
		clear(k.aeads)
	}
	k.aeads[cacheKey] = a
	return a, nil
}

// sealer seals under one key: the current one, fetched once per call of
// the store so a batch uses one key.
type sealer struct {
	keyID string
	aead  cipher.AEAD
}

// current returns a sealer under the provider's current key.
func (k *keys) current(ctx context.Context) (sealer, error) {
	id, err := k.provider.CurrentKeyID(ctx)
	if err != nil {
		return sealer{}, fmt.Errorf("current key id: %w", err)
	}
	if err := CheckKeyID(id); err != nil {
		return sealer{}, fmt.Errorf("current key id: %w", err)
	}
	a, err := k.aead(ctx, id)
	if err != nil {
		return sealer{}, err
	}
	return sealer{keyID: id, aead: a}, nil
}

// seal returns the envelope of value for column ch of row b.
func (s sealer) seal(ch store.Channel, b bound, value []byte) ([]byte, error) {
	out := make([]byte, 0, len(magic)+3+len(s.keyID)+nonceSize+len(value)+s.aead.Overhead())
	out = append(out, magic...)
	out = append(out, version1, b.binding, byte(len(s.keyID)))
	out = append(out, s.keyID...)
	n := len(out)
	out = out[:n+nonceSize]
	if _, err := rand.Read(out[n:]); err != nil {
		return nil, fmt.Errorf("encrypt: nonce: %w", err)
	}
	return s.aead.Seal(out, out[n:], value, additionalData(out[:n], ch, b)), nil
}

// sealText is seal for a text channel.
func (s sealer) sealText(ch store.Channel, b bound, value string) (string, error) {
	env, err := s.seal(ch, b, []byte(value))
	if err != nil {
		return "", err
	}
	return textPrefix + base64.StdEncoding.EncodeToString(env), nil
}

// open returns the value an envelope holds, given the row and column it is
// read from, and the id of the key that sealed it. An error wraps
// ErrUndecryptable (and ErrKeyNotFound for a key the provider lacks).
func (k *keys) open(ctx context.Context, env []byte, ch store.Channel, b bound) ([]byte, string, error) {
	h, err := parse(env)
	if err != nil {
		return nil, "", err
	}
	if !b.matches(h.binding) {
		return nil, h.keyID, fmt.Errorf("%w: the envelope is bound to a %s, read as %s", ErrUndecryptable, bindingName(h.binding), b)
	}
	a, err := k.aead(ctx, h.keyID)
	if err != nil {
		return nil, h.keyID, fmt.Errorf("%w: %w", ErrUndecryptable, err)
	}
	nonce := env[h.n : h.n+nonceSize]
	value, err := a.Open(nil, nonce, env[h.n+nonceSize:], additionalData(env[:h.n], ch, b))
	if err != nil {
		return nil, h.keyID, fmt.Errorf("%w: authentication failed under key %q: tampered with, or moved from another row or column than %s %s",
			ErrUndecryptable, h.keyID, b, ch)
	}
	return value, h.keyID, nil
}

// openText is open for a text channel.
func (k *keys) openText(ctx context.Context, text string, ch store.Channel, b bound) (string, string, error) {
	env, err := base64.StdEncoding.DecodeString(text[len(textPrefix):])
	if err != nil {
		return "", "", fmt.Errorf("%w: text envelope: %w", ErrUndecryptable, err)
	}
	v, id, err := k.open(ctx, env, ch, b)
	return string(v), id, err
}

func bindingName(b byte) string {
	switch b {
	case bindJob:
		return "job"
	case bindSchedule:
		return "schedule template"
	}
	return fmt.Sprintf("binding(%d)", b)
}

// keyIDOf returns the key id a stored value was sealed with, and false for
// a plaintext or malformed value.
func keyIDOf(v []byte, text bool) (string, bool) {
	if text {
		s := string(v)
		if !SealedText(s) {
			return "", false
		}
		env, err := base64.StdEncoding.DecodeString(s[len(textPrefix):])
		if err != nil {
			return "", false
		}
		v = env
	}
	if !Sealed(v) {
		return "", false
	}
	h, err := parse(v)
	if err != nil {
		return "", false
	}
	return h.keyID, true
}
