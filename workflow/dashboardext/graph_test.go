package dashboardext

import (
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/workflow"
)

func member(id backwave.JobID, s backwave.JobState, c backwave.CancelCause, payload string, parents ...backwave.JobID) backwave.WorkflowMember {
	return backwave.WorkflowMember{Job: backwave.JobInfo{ID: id, WireName: "w.step", State: s, CancelCause: c, Payload: []byte(payload)}, Parents: parents}
}

// The graph puts members in columns by depth, draws one edge per parent,
// and outlines the failed path — members and the edges between them — in
// red, and only it.
func TestLayout(t *testing.T) {
	t.Parallel()
	d := backwave.WorkflowDetail{Members: []backwave.WorkflowMember{
		member(1, backwave.StateSucceeded, backwave.CancelCauseNone, `{"backwave_workflow":{"name":"root"}}`),
		member(2, backwave.StateDeadLettered, backwave.CancelCauseNone, `{}`, 1),
		member(3, backwave.StateSucceeded, backwave.CancelCauseNone, `{}`, 1),
		member(4, backwave.StateCancelled, backwave.CancelCauseParentFailure, `{}`, 2, 3),
	}}
	path := workflow.FailedPath(d)
	g := layout(d, path, true)
	if len(g.Boxes) != 4 || len(g.Edges) != 4 {
		t.Fatalf("%d boxes, %d edges; want 4 and 4", len(g.Boxes), len(g.Edges))
	}
	col := func(i int) int { return (g.Boxes[i].X - margin) / (boxW + colGap) }
	if col(0) != 0 || col(1) != 1 || col(2) != 1 || col(3) != 2 {
		t.Errorf("columns %d %d %d %d, want 0 1 1 2", col(0), col(1), col(2), col(3))
	}
	if g.Boxes[1].Y == g.Boxes[2].Y {
		t.Error("two members of one column share a row")
	}
	for i, n := range g.Boxes {
		want := n.ID == 2 || n.ID == 4
		if n.FailedPath != want || (n.Stroke == strokeFailed) != want {
			t.Errorf("member %d: failed path %v stroke %s; want failed path %v", i, n.FailedPath, n.Stroke, want)
		}
	}
	red := 0
	for _, e := range g.Edges {
		if e.FailedPath {
			red++
			if e.Stroke != strokeFailed {
				t.Errorf("failed-path edge drawn %s", e.Stroke)
			}
		}
	}
	if red != 1 { // 2 → 4 only: 1 → 2 leads to the failure, 3 → 4 is a succeeded parent
		t.Errorf("%d failed-path edges, want 1", red)
	}
	if g.Boxes[0].Label != "w.step#root" {
		t.Errorf("label %q, want the Step name for a caller who may read payloads", g.Boxes[0].Label)
	}
	if g.Width < 3*boxW || g.Height < 2*boxH {
		t.Errorf("canvas %dx%d is smaller than the graph", g.Width, g.Height)
	}
}

// Without ViewSensitiveData the Step name, which rides in the payload, is
// not shown: the label is the Wire Name.
func TestLabelsWithoutSensitive(t *testing.T) {
	t.Parallel()
	d := backwave.WorkflowDetail{Members: []backwave.WorkflowMember{
		member(1, backwave.StateRunning, backwave.CancelCauseNone, `{"backwave_workflow":{"name":"secret-name"}}`),
	}}
	g := layout(d, nil, false)
	rows, by := rowsOf(d, nil, false)
	if strings.Contains(g.Boxes[0].Label+g.Boxes[0].Title+rows[0].Step, "secret") {
		t.Errorf("the Step name shows without ViewSensitiveData: %q %q %q", g.Boxes[0].Label, g.Boxes[0].Title, rows[0].Step)
	}
	if len(by) != 1 || by[0].State != backwave.StateRunning || by[0].Count != 1 {
		t.Errorf("by state %+v", by)
	}
}

// A Workflow too big to draw shows its table only.
func TestLayoutOmitsHugeGraph(t *testing.T) {
	t.Parallel()
	var d backwave.WorkflowDetail
	for i := range maxDrawn + 1 {
		d.Members = append(d.Members, member(backwave.JobID(i+1), backwave.StateScheduled, backwave.CancelCauseNone, `{}`))
	}
	if g := layout(d, nil, true); !g.Omitted || len(g.Boxes) != 0 {
		t.Errorf("omitted %v with %d boxes", g.Omitted, len(g.Boxes))
	}
}
