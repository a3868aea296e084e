package postgres

// MigrationVersions lists the versions of the embedded migrations, in order.
func MigrationVersions() []int {
	var out []int
	for _, m := range migrations() {
		out = append(out, m.version)
	}
	return out
}
