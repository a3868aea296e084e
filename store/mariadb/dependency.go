package mariadb

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// link records child's edges to its parents.
func (w *wtx) link(child job.ID, parents []job.ID) error {
	for _, p := range parents {
		if _, err := w.exec(`INSERT INTO backwave_job_edge (child, parent) VALUES (?, ?)`, int64(child), int64(p)); err != nil {
			return fmt.Errorf("job %d: link parent %d: %w", child, p, err)
		}
	}
	return nil
}

// settle counts the terminal job parent against each of its dependents'
// latches, once per edge ever, moving a dependent whose latch says so
// (core.AfterParent) — and, through move, its own dependents in turn,
// breadth first, as the In-Memory Store does.
func (w *wtx) settle(parent job.ID) error {
	w.settleQueue = append(w.settleQueue, int64(parent))
	if w.settling {
		return nil
	}
	w.settling = true
	defer func() { w.settling = false }()
	for len(w.settleQueue) > 0 {
		pid := w.settleQueue[0]
		w.settleQueue = w.settleQueue[1:]
		p, err := w.load(job.ID(pid))
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		children, err := w.uncounted(pid)
		if err != nil {
			return err
		}
		for _, cid := range children {
			if _, err := w.exec(`UPDATE backwave_job_edge SET counted = 1 WHERE child = ? AND parent = ?`, cid, pid); err != nil {
				return fmt.Errorf("count edge %d→%d: %w", pid, cid, err)
			}
			d, err := w.load(job.ID(cid))
			if err != nil {
				return err
			}
			d.depPending--
			if d.job.State != job.StateAwaitingParent {
				if err := w.save(d); err != nil {
					return err
				}
				continue
			}
			to, via, moved := core.AfterParent(job.DependencyMode(d.depMode-1), p.job.State, int(d.depPending))
			if !moved {
				if err := w.save(d); err != nil {
					return err
				}
				continue
			}
			switch to {
			case job.StateScheduled:
				d.job.ScheduledAt = core.ReleasedDueAt(d.job.ScheduledAt, w.now)
			case job.StateCancelled:
				d.job.CancelCause = job.CancelCauseParentFailure
			}
			if err := w.move(d, to, via, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// uncounted lists the dependents of parent whose edge is not counted yet,
// ascending.
func (w *wtx) uncounted(parent int64) ([]int64, error) {
	rows, err := w.query(`SELECT child FROM backwave_job_edge WHERE parent = ? AND counted = 0 ORDER BY child`, parent)
	if err != nil {
		return nil, fmt.Errorf("read dependents of %d: %w", parent, err)
	}
	defer func() { _ = rows.Close() }()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// JobDependencies returns the job's place in the Dependency graph.
func (s *Store) JobDependencies(ctx context.Context, id job.ID) (store.DependencyInfo, error) {
	var info store.DependencyInfo
	err := s.read(ctx, "dependencies", func(q querier, _ time.Time) error {
		var mode int64
		if err := q.QueryRowContext(ctx, `SELECT dep_mode FROM backwave_job WHERE id = ?`, int64(id)).Scan(&mode); err != nil {
			return notFound(err, id)
		}
		if mode > 0 {
			info.Mode = job.DependencyMode(mode - 1)
		}
		rows, err := q.QueryContext(ctx, `SELECT e.parent, p.state, e.counted FROM backwave_job_edge e
			JOIN backwave_job p ON p.id = e.parent WHERE e.child = ? ORDER BY e.parent`, int64(id))
		if err != nil {
			return err
		}
		for rows.Next() {
			var pid, st int64
			var counted bool
			if err := rows.Scan(&pid, &st, &counted); err != nil {
				_ = rows.Close()
				return err
			}
			state, err := decode(stateCodes, "state", st)
			if err != nil {
				_ = rows.Close()
				return err
			}
			info.Parents = append(info.Parents, store.ParentEdge{ID: job.ID(pid), State: state, Counted: counted})
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = q.QueryContext(ctx, `SELECT child FROM backwave_job_edge WHERE parent = ? ORDER BY child`, int64(id))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var c int64
			if err := rows.Scan(&c); err != nil {
				return err
			}
			info.Dependents = append(info.Dependents, job.ID(c))
		}
		return rows.Err()
	})
	return info, err
}

// JobAncestorOutput reads the Job Output of one of the job's ancestors.
func (s *Store) JobAncestorOutput(ctx context.Context, p store.AncestorOutputParams) (store.AncestorOutput, error) {
	var out store.AncestorOutput
	err := s.read(ctx, "ancestor output", func(q querier, _ time.Time) error {
		var one int
		if err := q.QueryRowContext(ctx, `SELECT 1 FROM backwave_job WHERE id = ?`, int64(p.Job)).Scan(&one); err != nil {
			return notFound(err, p.Job)
		}
		ok, err := isAncestor(ctx, q, p.Job, p.Ancestor)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("job %d reads the output of job %d: %w", p.Job, p.Ancestor, store.ErrNotAncestor)
		}
		var st int64
		var output []byte
		var present bool
		if err := q.QueryRowContext(ctx, `SELECT state, output, output IS NOT NULL FROM backwave_job WHERE id = ?`, int64(p.Ancestor)).
			Scan(&st, &output, &present); err != nil {
			return notFound(err, p.Ancestor)
		}
		if out.State, err = decode(stateCodes, "state", st); err != nil {
			return err
		}
		out.Present = present
		if present {
			out.Output = output
			if out.Output == nil {
				out.Output = []byte{}
			}
		}
		return nil
	})
	return out, err
}

// isAncestor walks the parent edges up from id looking for ancestor.
func isAncestor(ctx context.Context, q querier, id, ancestor job.ID) (bool, error) {
	if ancestor < 1 || ancestor >= id {
		return false, nil
	}
	seen := map[int64]bool{}
	stack := []int64{int64(id)}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		rows, err := q.QueryContext(ctx, `SELECT parent FROM backwave_job_edge WHERE child = ? AND parent >= ?`, d, int64(ancestor))
		if err != nil {
			return false, err
		}
		var parents []int64
		for rows.Next() {
			var pid int64
			if err := rows.Scan(&pid); err != nil {
				_ = rows.Close()
				return false, err
			}
			parents = append(parents, pid)
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		for _, pid := range parents {
			if pid == int64(ancestor) {
				return true, nil
			}
			if !seen[pid] {
				seen[pid] = true
				stack = append(stack, pid)
			}
		}
	}
	return false, nil
}
