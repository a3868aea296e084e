package dashboardext

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/workflow"
)

// Layout of the graph's SVG, in user units.
const (
	boxW     = 200
	boxH     = 46
	colGap   = 70
	rowGap   = 18
	margin   = 12
	maxLabel = 26
	// maxDrawn is the most members the graph draws; a bigger Workflow shows
	// its member table only.
	maxDrawn = 400
)

// graphView is a Workflow's graph laid out for the page's SVG: members in
// columns by depth, edges from parent to dependent, the failed path marked.
type graphView struct {
	Width, Height int
	Boxes         []boxView
	Edges         []edgeView
	// Omitted is set when the Workflow has too many members to draw.
	Omitted bool
}

type boxView struct {
	ID         backwave.JobID
	Label      string // shortened for the box
	Title      string // the whole label, for the tooltip
	State      backwave.JobState
	Fill       string
	Stroke     string
	StrokeW    int
	FailedPath bool
	X, Y       int
	TextX      int
	TextY1     int
	TextY2     int
}

type edgeView struct {
	D          string // the path
	Stroke     string
	StrokeW    int
	FailedPath bool
}

// memberRow is one line of the member table.
type memberRow struct {
	ID          backwave.JobID
	Step        string
	State       backwave.JobState
	CancelCause string
	After       []backwave.JobID
	Mode        string
	FailedPath  bool
}

// stateCount is members by state, in the states' order.
type stateCount struct {
	State backwave.JobState
	Count int
	IDs   []backwave.JobID
}

// fills are the box colours per state: presentation attributes, which the
// dashboard's Content-Security-Policy allows where inline CSS is not.
func fillOf(s backwave.JobState) string {
	switch s {
	case backwave.StateSucceeded:
		return "#dcf1e1"
	case backwave.StateDeadLettered, backwave.StateQuarantined:
		return "#fbe1df"
	case backwave.StateCancelled:
		return "#eeeeee"
	case backwave.StateRunning:
		return "#dde9fb"
	case backwave.StateAwaitingParent:
		return "#fff4d6"
	default:
		return "#f4f6f8"
	}
}

const (
	strokeNormal = "#8a96a3"
	strokeFailed = "#c0392b"
)

// label returns a member's label, the Step name only for a caller who may
// read payloads (it is baked into the payload).
func label(j backwave.JobInfo, sensitive bool) string {
	if sensitive {
		return workflow.Label(j)
	}
	return j.WireName
}

func shorten(s string) string {
	r := []rune(s)
	if len(r) <= maxLabel {
		return s
	}
	return string(r[:maxLabel-1]) + "…"
}

// layout lays d's graph out.
func layout(d backwave.WorkflowDetail, path map[backwave.JobID]bool, sensitive bool) graphView {
	if len(d.Members) > maxDrawn {
		return graphView{Omitted: true}
	}
	depth := workflow.Depths(d)
	rows := make(map[int]int)
	pos := make(map[backwave.JobID][2]int, len(d.Members))
	var g graphView
	maxCol, maxRow := 0, 0
	for i, m := range d.Members {
		col, row := depth[i], rows[depth[i]]
		rows[col]++
		x := margin + col*(boxW+colGap)
		y := margin + row*(boxH+rowGap)
		pos[m.Job.ID] = [2]int{x, y}
		maxCol, maxRow = max(maxCol, col), max(maxRow, row)
		full := label(m.Job, sensitive)
		n := boxView{ID: m.Job.ID, Label: shorten(full), Title: fmt.Sprintf("job %d: %s (%s)", m.Job.ID, full, m.Job.State),
			State: m.Job.State, Fill: fillOf(m.Job.State), Stroke: strokeNormal, StrokeW: 1, FailedPath: path[m.Job.ID],
			X: x, Y: y, TextX: x + 8, TextY1: y + 19, TextY2: y + 37}
		if n.FailedPath {
			n.Stroke, n.StrokeW = strokeFailed, 3
		}
		g.Boxes = append(g.Boxes, n)
	}
	for _, m := range d.Members {
		to, ok := pos[m.Job.ID]
		if !ok {
			continue
		}
		for _, p := range m.Parents {
			from, ok := pos[p]
			if !ok {
				continue
			}
			x1, y1 := from[0]+boxW, from[1]+boxH/2
			x2, y2 := to[0], to[1]+boxH/2
			mid := (x1 + x2) / 2
			e := edgeView{D: "M" + strconv.Itoa(x1) + " " + strconv.Itoa(y1) + " C" + strconv.Itoa(mid) + " " + strconv.Itoa(y1) + " " +
				strconv.Itoa(mid) + " " + strconv.Itoa(y2) + " " + strconv.Itoa(x2) + " " + strconv.Itoa(y2),
				Stroke: strokeNormal, StrokeW: 1, FailedPath: path[p] && path[m.Job.ID]}
			if e.FailedPath {
				e.Stroke, e.StrokeW = strokeFailed, 3
			}
			g.Edges = append(g.Edges, e)
		}
	}
	g.Width = 2*margin + (maxCol+1)*boxW + maxCol*colGap
	g.Height = 2*margin + (maxRow+1)*boxH + maxRow*rowGap
	return g
}

// rowsOf returns the member table and the members by state.
func rowsOf(d backwave.WorkflowDetail, path map[backwave.JobID]bool, sensitive bool) ([]memberRow, []stateCount) {
	rows := make([]memberRow, len(d.Members))
	by := make(map[backwave.JobState][]backwave.JobID)
	for i, m := range d.Members {
		r := memberRow{ID: m.Job.ID, Step: label(m.Job, sensitive), State: m.Job.State,
			CancelCause: m.Job.CancelCause.String(), After: m.Parents, FailedPath: path[m.Job.ID]}
		if len(m.Parents) > 0 {
			r.Mode = m.Mode.String()
		}
		rows[i] = r
		by[m.Job.State] = append(by[m.Job.State], m.Job.ID)
	}
	var counts []stateCount
	for _, s := range slices.Sorted(maps.Keys(by)) {
		counts = append(counts, stateCount{State: s, Count: len(by[s]), IDs: by[s]})
	}
	return rows, counts
}
