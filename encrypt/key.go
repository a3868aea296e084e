package encrypt

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/backwave/backwave/store"
)

// KeySize is the length of every key: AES-256.
const KeySize = 32

// MaxKeyIDLen bounds a key id, in bytes; it is stored in every envelope.
const MaxKeyIDLen = 64

// Errors of key lookup. Callers test with errors.Is.
var (
	// ErrNoKeyProvider: encryption was asked for without a key provider.
	ErrNoKeyProvider = errors.New("encrypt: no key provider")
	// ErrKeyNotFound: the key provider holds no key with that id (it was
	// never configured, or it was purged).
	ErrKeyNotFound = errors.New("encrypt: key not found")
	// ErrInvalidKey: a key or key id has the wrong form.
	ErrInvalidKey = errors.New("encrypt: invalid key")
)

// KeyProvider hands out the keys Encryption at Rest seals and opens with.
// Every key has an id, stored in the clear in each envelope it seals, so a
// row stays readable by its own key after the current one changes. An
// implementation may fetch keys from a key management service; it must be
// safe for concurrent use.
type KeyProvider interface {
	// CurrentKeyID names the key every new write is sealed with.
	CurrentKeyID(ctx context.Context) (string, error)
	// Key returns the KeySize bytes of the key with that id, or an error
	// wrapping ErrKeyNotFound if the provider does not hold it.
	Key(ctx context.Context, id string) ([]byte, error)
}

// KeyRing is a KeyProvider over keys held in memory: a current one and
// any number of older ones kept to read rows sealed before a rotation.
// It is immutable once made.
type KeyRing struct {
	current string
	keys    map[string][]byte
}

var _ KeyProvider = (*KeyRing)(nil)

// NewKeyRing returns a ring whose current key is keys[current]. Every key
// must be KeySize bytes and every id valid (CheckKeyID).
func NewKeyRing(current string, keys map[string][]byte) (*KeyRing, error) {
	r := &KeyRing{current: current, keys: make(map[string][]byte, len(keys))}
	for id, k := range keys {
		if err := CheckKeyID(id); err != nil {
			return nil, err
		}
		if len(k) != KeySize {
			return nil, fmt.Errorf("%w: key %q is %d bytes, want %d", ErrInvalidKey, id, len(k), KeySize)
		}
		r.keys[id] = append([]byte(nil), k...)
	}
	if _, ok := r.keys[current]; !ok {
		return nil, fmt.Errorf("%w: the current key %q is not in the ring", ErrKeyNotFound, current)
	}
	return r, nil
}

// ParseKeyRing reads a ring from text such as an environment variable
// holds: comma-separated id=key pairs, each key standard base64 of
// KeySize bytes, the first pair the current key, e.g.
// "k2=<base64>,k1=<base64>".
func ParseKeyRing(text string) (*KeyRing, error) {
	var current string
	keys := make(map[string][]byte)
	for i, pair := range strings.Split(strings.TrimSpace(text), ",") {
		id, enc, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, fmt.Errorf("%w: key ring entry %d is not id=base64", ErrInvalidKey, i+1)
		}
		// The id first, entry by entry: the error then names the first bad
		// entry, never a 10 KB id, and never a byte of key material.
		if err := CheckKeyID(id); err != nil {
			return nil, fmt.Errorf("key ring entry %d: %w", i+1, err)
		}
		k, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("%w: key ring entry %d (key %q) is not standard base64: %w", ErrInvalidKey, i+1, id, err)
		}
		if len(k) != KeySize {
			return nil, fmt.Errorf("%w: key ring entry %d (key %q) is %d bytes, want %d", ErrInvalidKey, i+1, id, len(k), KeySize)
		}
		if _, dup := keys[id]; dup {
			return nil, fmt.Errorf("%w: key %q named twice", ErrInvalidKey, id)
		}
		keys[id] = k
		if i == 0 {
			current = id
		}
	}
	return NewKeyRing(current, keys)
}

// CurrentKeyID returns the id of the current key. A nil ring has none.
func (r *KeyRing) CurrentKeyID(context.Context) (string, error) {
	if r == nil {
		return "", fmt.Errorf("%w: a nil key ring", ErrNoKeyProvider)
	}
	return r.current, nil
}

// Key returns the key with that id.
func (r *KeyRing) Key(_ context.Context, id string) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: a nil key ring", ErrNoKeyProvider)
	}
	k, ok := r.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrKeyNotFound, id)
	}
	return k, nil
}

// Without returns a ring holding every key but the one with that id: the
// ring after that key was purged. The current key cannot be purged.
func (r *KeyRing) Without(id string) (*KeyRing, error) {
	keys := maps.Clone(r.keys)
	delete(keys, id)
	return NewKeyRing(r.current, keys)
}

// CheckKeyID checks a key id: 1 to MaxKeyIDLen bytes of ASCII letters,
// digits and "-_.:".
func CheckKeyID(id string) error {
	if id == "" || len(id) > MaxKeyIDLen {
		return fmt.Errorf("%w: key id %s must be 1 to %d bytes", ErrInvalidKey, store.Echo(id), MaxKeyIDLen)
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return fmt.Errorf("%w: key id %s: only letters, digits and -_.: are allowed", ErrInvalidKey, store.Echo(id))
		}
	}
	return nil
}
