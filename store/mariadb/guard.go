package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// MariaDB's ALTER TABLE takes IF NOT EXISTS on ADD COLUMN and ADD KEY;
// MySQL 8's does not (a syntax error). The migrations are written with it,
// so that one cut short is run again and finds done what was done; on
// MySQL the migrator does the same by asking information_schema first:
// each guarded clause of an ALTER is dropped when its column or index
// exists and loses its guard when it does not (guardAlter), and an ALTER
// left with no clause is not run.

var (
	// alterRE is an ALTER TABLE statement: its table and its clauses.
	alterRE = regexp.MustCompile(`(?is)^\s*ALTER\s+TABLE\s+(\w+)\s+(.*?)\s*;?\s*$`)
	// guardedRE is one guarded ADD clause: the object's kind and name.
	guardedRE = regexp.MustCompile(`(?is)^ADD\s+(COLUMN|KEY|INDEX)\s+IF\s+NOT\s+EXISTS\s+(\w+)\b(.*)$`)
)

// exists reports whether the table has the column (kind "COLUMN") or
// index ("KEY", "INDEX") of that name.
type exists func(ctx context.Context, table, kind, name string) (bool, error)

// guardAlter rewrites one migration statement for a server without IF
// NOT EXISTS on ALTER TABLE's clauses: a statement that is no ALTER, or
// has no guarded clause, comes back as it is; otherwise the clauses whose
// object exists are dropped and the others lose their guard. run is false
// when no clause is left to run.
func guardAlter(ctx context.Context, stmt string, has exists) (out string, run bool, err error) {
	m := alterRE.FindStringSubmatch(stmt)
	if m == nil || !strings.Contains(strings.ToUpper(m[2]), "IF NOT EXISTS") {
		return stmt, true, nil
	}
	table := m[1]
	var keep []string
	for _, clause := range splitClauses(m[2]) {
		g := guardedRE.FindStringSubmatch(clause)
		if g == nil {
			keep = append(keep, clause)
			continue
		}
		found, err := has(ctx, table, strings.ToUpper(g[1]), g[2])
		if err != nil {
			return "", false, fmt.Errorf("does %s %s %s exist: %w", table, strings.ToLower(g[1]), g[2], err)
		}
		if !found {
			keep = append(keep, "ADD "+g[1]+" "+g[2]+g[3])
		}
	}
	if len(keep) == 0 {
		return "", false, nil
	}
	return "ALTER TABLE " + table + "\n\t" + strings.Join(keep, ",\n\t"), true, nil
}

// splitClauses splits an ALTER TABLE's clauses at the commas outside
// parentheses and quotes.
func splitClauses(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" {
		out = append(out, last)
	}
	return out
}

// schemaHas answers exists from information_schema, for the connection's
// database.
func schemaHas(q querier) exists {
	return func(ctx context.Context, table, kind, name string) (bool, error) {
		query := `SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ?`
		if kind == "COLUMN" {
			query = `SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`
		}
		var n sql.NullInt64
		if err := q.QueryRowContext(ctx, query, table, name).Scan(&n); err != nil {
			return false, err
		}
		return n.Int64 > 0, nil
	}
}
