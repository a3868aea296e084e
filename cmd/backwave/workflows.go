package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/workflow"
)

func workflowsCommand() *cli.Command {
	return &cli.Command{
		Name:      "workflows",
		Usage:     "list and show Workflows; cancel, restart and retry them",
		UsageText: "backwave workflows list|show|cancel|restart|retry --db URI …",
		Commands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list Workflows, newest first, with their status and members by state",
				UsageText: "backwave workflows list --db URI [--status S] [--name NAME] [--limit N] [--before ID] [--json]",
				Flags: []cli.Flag{
					dbFlag(),
					&cli.StringFlag{Name: "status", Usage: "keep Workflows of this status: running, succeeded, failed or cancelled"},
					&cli.StringFlag{Name: "name", Usage: "keep Workflows of exactly this name"},
					limitFlag("workflows", 50, backwave.MaxPageLimit),
					&cli.Int64Flag{Name: "before", Usage: "list older Workflows (the next page: the cursor a cut list printed)"},
					jsonFlag(),
				},
				Action: workflowsList,
			},
			{
				Name:  "show",
				Usage: "show one Workflow: its members by state, their Dependency edges, and the failed path",
				Description: "The failed path is every Dead-Lettered or Quarantined member and what its failure cancelled\n" +
					"downstream (members Cancelled with cause parent_failure); a '!' marks them.",
				UsageText: "backwave workflows show --db URI [--json] ID",
				Flags:     []cli.Flag{dbFlag(), jsonFlag()},
				Action:    workflowsShow,
			},
			{
				Name:      "cancel",
				Usage:     "cancel every live member of a Workflow: waiting ones at once, running ones at their next heartbeat",
				UsageText: "backwave workflows cancel --db URI [--actor WHO] ID",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: workflowAction(func(*cli.Command) (workflowFunc, error) {
					return func(ctx context.Context, a *backwave.Admin, id backwave.WorkflowID) (string, error) {
						w, err := a.CancelWorkflow(ctx, id)
						if err != nil {
							return "", err
						}
						return fmt.Sprintf("workflow %d: %s (%s)", id, w.Status, countsText(w.Counts)), nil
					}, nil
				}),
			},
			{
				Name:      "restart",
				Usage:     "Workflow Restart: create a new Workflow from this one's definition, every member run again from the start",
				UsageText: "backwave workflows restart --db URI [--actor WHO] ID",
				Flags:     []cli.Flag{dbFlag(), actorFlag()},
				Action: workflowAction(func(*cli.Command) (workflowFunc, error) {
					return func(ctx context.Context, a *backwave.Admin, id backwave.WorkflowID) (string, error) {
						w, err := a.RestartWorkflow(ctx, id)
						if err != nil {
							return "", err
						}
						return fmt.Sprintf("workflow %d: restarted as workflow %d (%s, %d members)", id, w.ID, w.Status, w.Members), nil
					}, nil
				}),
			},
			{
				Name:  "retry",
				Usage: "Workflow Retry: reanimate terminal members in place, under the same ids",
				Description: "--scope all reanimates every terminal member; failed only the Dead-Lettered, Quarantined and\n" +
					"operator-cancelled ones; failed+downstream those and every terminal member below one (resume from failure).",
				UsageText: "backwave workflows retry --db URI [--actor WHO] --scope all|failed|failed+downstream ID",
				Flags: []cli.Flag{dbFlag(), actorFlag(),
					&cli.StringFlag{Name: "scope", Usage: "which members: all, failed or failed+downstream"},
				},
				Action: workflowAction(func(cmd *cli.Command) (workflowFunc, error) {
					raw := cmd.String("scope")
					if raw == "" {
						return nil, usagef("give the scope with --scope all|failed|failed+downstream")
					}
					scope, err := backwave.ParseWorkflowRetryScope(raw)
					if err != nil {
						return nil, usagef("--scope %q is not a retry scope: all, failed or failed+downstream", raw)
					}
					return func(ctx context.Context, a *backwave.Admin, id backwave.WorkflowID) (string, error) {
						w, err := a.RetryWorkflow(ctx, id, scope)
						if err != nil {
							return "", err
						}
						return fmt.Sprintf("workflow %d: retried (%s): %s (%s)", id, scope, w.Status, countsText(w.Counts)), nil
					}, nil
				}),
			},
		},
	}
}

// workflowIDArg parses the one positional Workflow id.
func workflowIDArg(cmd *cli.Command) (backwave.WorkflowID, error) {
	if cmd.Args().Len() != 1 {
		return 0, usagef("%s takes one workflow id, got %d arguments", cmd.FullName(), cmd.Args().Len())
	}
	n, err := strconv.ParseInt(cmd.Args().First(), 10, 64)
	if err != nil || n < 1 {
		return 0, usagef("%q is not a workflow id (a positive integer)", cmd.Args().First())
	}
	return backwave.WorkflowID(n), nil
}

// noSuchWorkflow turns the store's not-found for Workflow id into a noSuch.
func noSuchWorkflow(err error, id backwave.WorkflowID) error {
	if errors.Is(err, backwave.ErrNotFound) {
		return noSuch{what: fmt.Sprintf("workflow %d", id)}
	}
	return err
}

// workflowFunc performs one Operator Action on a Workflow and says what it
// did.
type workflowFunc = func(ctx context.Context, a *backwave.Admin, id backwave.WorkflowID) (string, error)

// workflowAction runs an action on the Workflow the one argument names, as
// the --actor. prepare checks the flags before the store is opened.
func workflowAction(prepare func(cmd *cli.Command) (workflowFunc, error)) cli.ActionFunc {
	return idAction(workflowIDArg, noSuchWorkflow, prepare)
}

// countsText renders members by state, in the states' order:
// "succeeded 3, dead_lettered 1".
func countsText(counts map[backwave.JobState]int) string {
	states := slices.Sorted(maps.Keys(counts))
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	if len(parts) == 0 {
		return "no members"
	}
	return strings.Join(parts, ", ")
}

// workflowView is a Workflow as the commands print it in JSON.
type workflowView struct {
	ID        int64          `json:"id"`
	Name      string         `json:"name"`
	Status    string         `json:"status"`
	CreatedAt string         `json:"created_at"`
	Members   int            `json:"members"`
	Counts    map[string]int `json:"counts"`
	RestartOf int64          `json:"restart_of,omitempty"`
}

func workflowViewOf(w backwave.WorkflowInfo) workflowView {
	v := workflowView{ID: int64(w.ID), Name: w.Name, Status: w.Status.String(), CreatedAt: stampJSON(w.CreatedAt),
		Members: w.Members, Counts: make(map[string]int, len(w.Counts)), RestartOf: int64(w.RestartOf)}
	for s, n := range w.Counts {
		v.Counts[s.String()] = n
	}
	return v
}

func workflowsList(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	limit, err := limitOf(cmd, backwave.MaxPageLimit)
	if err != nil {
		return err
	}
	p := backwave.WorkflowListParams{Name: cmd.String("name"),
		PageParams: backwave.PageParams{Limit: limit, Before: backwave.Cursor(cmd.Int64("before"))}}
	if n := cmd.Int64("before"); n < 0 {
		return usagef("--before %d is negative", n)
	}
	if raw := cmd.String("status"); raw != "" {
		if p.Status, err = backwave.ParseWorkflowStatus(raw); err != nil {
			return usagef("--status %q is not a workflow status: running, succeeded, failed or cancelled", raw)
		}
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	page, err := a.Workflows(ctx, p)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		out := make([]workflowView, len(page.Items))
		for i, wf := range page.Items {
			out[i] = workflowViewOf(wf)
		}
		return writeJSON(w, out)
	}
	err = printTable(w, "(no workflows)", "ID\tSTATUS\tNAME\tMEMBERS\tBY STATE\tCREATED AT\tRESTART OF", page.Items, func(wf backwave.WorkflowInfo) string {
		restart := "-"
		if wf.RestartOf != 0 {
			restart = wf.RestartOf.String()
		}
		return fmt.Sprintf("%d\t%s\t%s\t%d\t%s\t%s\t%s", wf.ID, wf.Status, wf.Name, wf.Members, countsText(wf.Counts), stamp(wf.CreatedAt), restart)
	})
	if err != nil {
		return err
	}
	if page.Next != 0 {
		fmt.Fprintf(w, "(more: --before %d)\n", page.Next)
	}
	return nil
}

// memberView is one member of a Workflow as show prints it in JSON.
type memberView struct {
	ID          int64   `json:"id"`
	Step        string  `json:"step"`
	State       string  `json:"state"`
	CancelCause string  `json:"cancel_cause,omitempty"`
	Parents     []int64 `json:"parents,omitempty"`
	Mode        string  `json:"mode,omitempty"`
	FailedPath  bool    `json:"failed_path,omitempty"`
}

func workflowsShow(ctx context.Context, cmd *cli.Command) error {
	id, err := workflowIDArg(cmd)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cmd)
	if err != nil {
		return err
	}
	defer done()
	d, err := a.Workflow(ctx, id)
	if err != nil {
		return noSuchWorkflow(err, id)
	}
	path := workflow.FailedPath(d)
	members := make([]memberView, len(d.Members))
	for i, m := range d.Members {
		v := memberView{ID: int64(m.Job.ID), Step: workflow.Label(m.Job), State: m.Job.State.String(),
			CancelCause: m.Job.CancelCause.String(), FailedPath: path[m.Job.ID]}
		for _, p := range m.Parents {
			v.Parents = append(v.Parents, int64(p))
		}
		if len(m.Parents) > 0 {
			v.Mode = m.Mode.String()
		}
		members[i] = v
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		return writeJSON(w, struct {
			workflowView
			Graph []memberView `json:"graph"`
		}{workflowViewOf(d.WorkflowInfo), members})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("id", d.ID)
	row("name", d.Name)
	row("status", d.Status)
	row("created at", stamp(d.CreatedAt))
	if d.RestartOf != 0 {
		row("restart of", d.RestartOf)
	}
	row("members", d.WorkflowInfo.Members)
	if err := tw.Flush(); err != nil {
		return err
	}
	return printMembers(w, d, members, path)
}

// printMembers prints the members by state, the graph's edges, and the
// failed path.
func printMembers(w io.Writer, d backwave.WorkflowDetail, members []memberView, path map[backwave.JobID]bool) error {
	fmt.Fprintln(w, "\nmembers by state:")
	byState := make(map[backwave.JobState][]string)
	for _, m := range d.Members {
		byState[m.Job.State] = append(byState[m.Job.State], m.Job.ID.String())
	}
	for _, s := range slices.Sorted(maps.Keys(byState)) {
		fmt.Fprintf(w, "  %s (%d): %s\n", s, len(byState[s]), strings.Join(byState[s], " "))
	}
	fmt.Fprintln(w, "\ngraph:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tID\tSTEP\tSTATE\tAFTER\tMODE")
	for _, m := range members {
		mark, after := " ", "-"
		if m.FailedPath {
			mark = "!"
		}
		if len(m.Parents) > 0 {
			ids := make([]string, len(m.Parents))
			for i, p := range m.Parents {
				ids[i] = strconv.FormatInt(p, 10)
			}
			after = strings.Join(ids, " ")
		}
		state := m.State
		if m.CancelCause != "" {
			state += " (" + m.CancelCause + ")"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\n", mark, m.ID, m.Step, state, after, dash(m.Mode))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(path) > 0 {
		var ids []string
		for _, m := range d.Members {
			if path[m.Job.ID] {
				ids = append(ids, m.Job.ID.String())
			}
		}
		fmt.Fprintf(w, "\nfailed path: %s\n", strings.Join(ids, " "))
	}
	return nil
}
