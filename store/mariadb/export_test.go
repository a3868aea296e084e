package mariadb

// MigrationCount is how many migrations this build embeds: SchemaVersion
// while no version is missing between them.
func MigrationCount() int { return len(migrations()) }
