package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/encrypt"
)

// keysEnv holds the Encryption at Rest key ring: "id=<base64 of 32 bytes>"
// entries separated by commas, the first one current.
const keysEnv = "BACKWAVE_KEYS"

// keyRing returns the key ring $BACKWAVE_KEYS holds, or nil when it is
// unset: the store is then used as it is, unencrypted.
func keyRing() (*encrypt.KeyRing, error) {
	v := os.Getenv(keysEnv)
	if v == "" {
		return nil, nil
	}
	ring, err := encrypt.ParseKeyRing(v)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", keysEnv, err)
	}
	return ring, nil
}

// withEncryption wraps st in Encryption at Rest when $BACKWAVE_KEYS is set,
// so every command reads and writes plaintext through it; on an error st is
// closed.
func withEncryption(ctx context.Context, st backwave.Store) (backwave.Store, error) {
	ring, err := keyRing()
	if err != nil || ring == nil {
		if err != nil {
			_ = st.Close()
		}
		return st, err
	}
	w, err := encrypt.Wrap(ctx, st, ring)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return w, nil
}

// keysCommand is `backwave keys`: Encryption at Rest key management.
func keysCommand() *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "Encryption at Rest: re-encrypt stored values under the current key",
		Commands: []*cli.Command{{
			Name:  "rotate",
			Usage: "rewrite every value not under the current key of $BACKWAVE_KEYS, in bounded batches, while jobs run",
			Description: "$BACKWAVE_KEYS is the key ring: id=<base64 of 32 bytes> entries separated by commas, the\n" +
				"first one current; it must still hold every older key in use. Values sealed under an older key\n" +
				"and plaintext written before encryption was turned on are rewritten; a value that changes\n" +
				"meanwhile is left to whoever changed it. Safe to rerun after an interruption.",
			Flags: []cli.Flag{
				dbFlag(),
				&cli.IntFlag{Name: "batch", Value: 500, Usage: "values read and rewritten per batch (1 to 10000)"},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				batch := cmd.Int("batch")
				if batch < 1 || batch > 10_000 {
					return usagef("--batch %d: want 1 to 10000", batch)
				}
				ring, err := keyRing()
				if err != nil {
					return usageError{err}
				}
				if ring == nil {
					return usagef("keys rotate needs $%s (the key ring, the current key first)", keysEnv)
				}
				t, err := targetOf(cmd)
				if err != nil {
					return err
				}
				st, err := openRaw(ctx, t)
				if err != nil {
					return err
				}
				defer func() { _ = st.Close() }()
				res, err := encrypt.Rotate(ctx, st, ring, int(batch))
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.Root().Writer, "rewrote %d values under the current key; %d already were; %d changed meanwhile (left alone); %d do not open (their jobs are Quarantined at claim)\n",
					res.Rewritten, res.Current, res.Changed, res.Unreadable)
				return nil
			},
		}},
	}
}
