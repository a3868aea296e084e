package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/backwave/backwave"
)

// dependencyView is a job's place in the Dependency graph as `jobs show`
// prints it in JSON.
type dependencyView struct {
	Mode       string       `json:"mode,omitempty"`
	Pending    int          `json:"pending"`
	Parents    []parentView `json:"parents,omitempty"`
	Dependents []int64      `json:"dependents,omitempty"`
}

type parentView struct {
	ID      int64  `json:"id"`
	State   string `json:"state"`
	Counted bool   `json:"counted"`
}

// dependencyViewOf reads the job's Dependency edges; nil when it has none.
func dependencyViewOf(ctx context.Context, a *backwave.Admin, id backwave.JobID) (*dependencyView, error) {
	info, err := a.Dependencies(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(info.Parents) == 0 && len(info.Dependents) == 0 {
		return nil, nil
	}
	v := &dependencyView{Pending: info.Pending}
	if len(info.Parents) > 0 {
		v.Mode = info.Mode.String()
	}
	for _, p := range info.Parents {
		v.Parents = append(v.Parents, parentView{ID: int64(p.ID), State: p.State.String(), Counted: p.Counted})
	}
	for _, d := range info.Dependents {
		v.Dependents = append(v.Dependents, int64(d))
	}
	return v, nil
}

// printDependencies prints the parents (with whether the job's latch has
// counted each) and the dependents of a job, if it has any.
func printDependencies(w io.Writer, v *dependencyView) error {
	if v == nil {
		return nil
	}
	if len(v.Parents) > 0 {
		fmt.Fprintf(w, "\nparents (%s, %d of %d pending):\n", v.Mode, v.Pending, len(v.Parents))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tSTATE\tCOUNTED")
		for _, p := range v.Parents {
			fmt.Fprintf(tw, "  %d\t%s\t%t\n", p.ID, p.State, p.Counted)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.Dependents) > 0 {
		ids := make([]string, len(v.Dependents))
		for i, d := range v.Dependents {
			ids[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(w, "\ndependents: %s\n", strings.Join(ids, " "))
	}
	return nil
}
