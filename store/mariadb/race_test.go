//go:build race

package mariadb_test

const raceEnabled = true
