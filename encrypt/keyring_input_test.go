package encrypt_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/backwave/backwave/encrypt"
)

// A malformed ring is refused with a short error naming the first bad
// entry: a 10 KB id is clipped, and no error repeats key material (issue
// 38, hole 5).
func TestParseKeyRingMalformed(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(make([]byte, encrypt.KeySize))
	short := base64.StdEncoding.EncodeToString([]byte("0123456789"))
	for _, text := range []string{
		"garbage",
		"",
		",",
		"=" + good,
		strings.Repeat("x", 10_000) + "=" + good,
		"k1=" + strings.Repeat("!", 10_000),
		"k1=" + short,
		"k1=" + good + ",k1=" + good,
		"k 1=" + good,
		"k1=" + good + ",bad id=" + strings.Repeat("A", 5000),
	} {
		_, err := encrypt.ParseKeyRing(text)
		if !errors.Is(err, encrypt.ErrInvalidKey) {
			t.Errorf("ParseKeyRing(%.40q): %v; want ErrInvalidKey", text, err)
			continue
		}
		if n := len(err.Error()); n > 200 {
			t.Errorf("ParseKeyRing(%.40q): a %d-byte error: %.200s", text, n, err)
		}
		if strings.Contains(err.Error(), good) || strings.Contains(err.Error(), short) {
			t.Errorf("ParseKeyRing(%.40q): the error repeats key material: %v", text, err)
		}
	}
	if _, err := encrypt.ParseKeyRing("k2=" + good + ",k1=" + good); err != nil {
		t.Errorf("a valid ring: %v", err)
	}
}
