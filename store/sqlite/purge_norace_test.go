//go:build !race

package sqlite

// purgeRows is how many jobs TestPurgeManyRows purges by default.
const purgeRows = 20_000
