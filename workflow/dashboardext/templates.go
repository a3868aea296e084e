package dashboardext

import (
	"strings"

	"github.com/backwave/backwave/permission"
)

// listTemplate is the Workflows list: a filter by status and name, and
// each Workflow with its status and members by state.
const listTemplate = `{{$base := .Base}}
<form method="get" action="{{.Base}}" class="filter" id="wf-filter">
<label>Status <select name="status"><option value="">any</option>{{range .Data.Statuses}}<option value="{{.}}"{{if eq . $.Data.Status}} selected{{end}}>{{.}}</option>{{end}}</select></label>
<label>Name <input type="text" name="name" value="{{.Data.Name}}"></label>
<button type="submit">Filter</button>
</form>
{{if .Data.Items}}
<table id="workflows">
<thead><tr><th>ID</th><th>Status</th><th>Name</th><th>Members</th><th>By state</th><th>Created</th><th>Restart of</th></tr></thead>
<tbody>
{{range .Data.Items}}<tr class="wf-{{.Status}}">
<td><a href="{{$base}}w/{{.ID}}">{{.ID}}</a></td>
<td><span class="wf-status">{{.Status}}</span></td>
<td>{{.Name}}</td>
<td>{{.Members}}</td>
<td>{{range .ByState}}{{template "state" .State}} {{.Count}} {{end}}</td>
<td>{{.CreatedAt.Format "2006-01-02 15:04:05"}}</td>
<td>{{if .RestartOf}}<a href="{{$base}}w/{{.RestartOf}}">{{.RestartOf}}</a>{{else}}-{{end}}</td>
</tr>
{{end}}</tbody>
</table>
{{if .Data.Next}}<p><a id="wf-more" href="{{.Base}}?status={{.Data.Status}}&amp;name={{.Data.Name}}&amp;before={{.Data.Next}}">Older Workflows</a></p>{{end}}
{{else}}<p id="no-workflows">No Workflows{{if or .Data.Status .Data.Name}} match the filter{{end}}.</p>{{end}}`

// detailBody is a Workflow's page; CAN_CANCEL, CAN_RESTART and CAN_RETRY
// are replaced by the Capabilities field of the Permission that gates each
// action, so a control shows exactly when its route would allow it.
const detailBody = `{{$base := .Base}}{{$prefix := .Prefix}}{{with .Data}}
<dl class="facts" id="wf-facts">
<dt>Workflow</dt><dd>{{.ID}} · {{.Name}}</dd>
<dt>Status</dt><dd><span class="wf-status" id="wf-status">{{.Status}}</span></dd>
<dt>Members</dt><dd>{{.Members}}</dd>
<dt>Created</dt><dd>{{.CreatedAt.Format "2006-01-02 15:04:05"}}</dd>
{{if .RestartOf}}<dt>Restart of</dt><dd><a href="{{$base}}w/{{.RestartOf}}">workflow {{.RestartOf}}</a></dd>{{end}}
</dl>
<h2>Members by state</h2>
<ul id="wf-by-state">{{range .ByState}}<li>{{template "state" .State}} {{.Count}}: {{range .IDs}}<a href="{{$prefix}}/jobs/{{.}}">{{.}}</a> {{end}}</li>{{end}}</ul>
{{if .FailedPath}}<p id="wf-failed-note">The failed path — {{.FailedPath}} members: what failed and what its failure cancelled downstream — is outlined in red.</p>{{end}}
<h2>Graph</h2>
{{if .Graph.Omitted}}<p id="wf-graph-omitted">This Workflow has too many members to draw; the table below lists them all.</p>{{else}}
<div class="wf-graph"><svg id="wf-graph" xmlns="http://www.w3.org/2000/svg" width="{{.Graph.Width}}" height="{{.Graph.Height}}" viewBox="0 0 {{.Graph.Width}} {{.Graph.Height}}" role="img" aria-label="graph of workflow {{.ID}}">
{{range .Graph.Edges}}<path class="edge{{if .FailedPath}} failed-path{{end}}" d="{{.D}}" fill="none" stroke="{{.Stroke}}" stroke-width="{{.StrokeW}}"/>
{{end}}{{range .Graph.Boxes}}<a href="{{$prefix}}/jobs/{{.ID}}" class="member" data-job="{{.ID}}" data-state="{{.State}}"{{if .FailedPath}} data-failed-path="true"{{end}}><title>{{.Title}}</title>
<rect x="{{.X}}" y="{{.Y}}" width="200" height="46" rx="5" fill="{{.Fill}}" stroke="{{.Stroke}}" stroke-width="{{.StrokeW}}"/>
<text x="{{.TextX}}" y="{{.TextY1}}" font-size="13" fill="#1d2730">{{.Label}}</text>
<text x="{{.TextX}}" y="{{.TextY2}}" font-size="11" fill="#4a5560">{{.ID}} · {{.State}}</text></a>
{{end}}</svg></div>{{end}}
<h2>Members</h2>
<table id="wf-members">
<thead><tr><th></th><th>Job</th><th>Step</th><th>State</th><th>After</th><th>Mode</th></tr></thead>
<tbody>{{range .Rows}}<tr{{if .FailedPath}} class="failed-path"{{end}}>
<td>{{if .FailedPath}}<span title="on the failed path">!</span>{{end}}</td>
<td><a href="{{$prefix}}/jobs/{{.ID}}">{{.ID}}</a></td><td>{{.Step}}</td>
<td>{{template "state" .State}}{{if .CancelCause}} ({{.CancelCause}}){{end}}</td>
<td>{{range .After}}<a href="{{$prefix}}/jobs/{{.}}">{{.}}</a> {{else}}-{{end}}</td><td>{{or .Mode "-"}}</td>
</tr>{{end}}</tbody>
</table>
{{end}}
<h2>Operator Actions</h2>
<div class="actions" id="wf-actions">
{{if .Can.CAN_CANCEL}}<form method="post" action="{{.Base}}w/{{.Data.ID}}/cancel"><button type="submit" id="wf-cancel">Cancel every live member</button></form>{{end}}
{{if .Can.CAN_RESTART}}<form method="post" action="{{.Base}}w/{{.Data.ID}}/restart"><button type="submit" id="wf-restart">Restart as a new Workflow</button></form>{{end}}
{{if .Can.CAN_RETRY}}<form method="post" action="{{.Base}}w/{{.Data.ID}}/retry"><label>Scope <select name="scope" id="wf-scope">{{range .Data.Scopes}}<option value="{{.}}">{{.}}</option>{{end}}</select></label> <button type="submit" id="wf-retry">Retry in place</button></form>{{end}}
{{if not (or .Can.CAN_CANCEL .Can.CAN_RESTART .Can.CAN_RETRY)}}<p id="wf-no-actions">You may view this Workflow; its Operator Actions need the Cancel or Requeue permission.</p>{{end}}
</div>`

// capField names the dashboard.Capabilities field of a write Permission.
func capField(p permission.Permission) string {
	switch p {
	case permission.Requeue:
		return "Requeue"
	case permission.Cancel:
		return "Cancel"
	case permission.TriggerSchedule:
		return "Trigger"
	case permission.PauseQueue:
		return "Pause"
	}
	// Not a write Permission: the dashboard refuses the action at New, so
	// this never renders. Keep the template valid all the same.
	return "Cancel"
}

func detailTemplate() string {
	return strings.NewReplacer(
		"CAN_CANCEL", capField(permission.ActionCancelWorkflow.Permission()),
		"CAN_RESTART", capField(permission.ActionRestartWorkflow.Permission()),
		"CAN_RETRY", capField(permission.ActionRetryWorkflow.Permission()),
	).Replace(detailBody)
}
