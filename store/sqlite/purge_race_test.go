//go:build race

package sqlite

// purgeRows is how many jobs TestPurgeManyRows purges by default: fewer
// under the race detector, where the pure-Go engine runs far slower.
const purgeRows = 2_000
