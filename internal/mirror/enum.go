package mirror

// Enum is a root package type that mirrors an enumeration of a job, core or
// store type, constant for constant (JobState and job.State, Via and
// core.Via, …). Its constants are written by hand, each with its own doc;
// the mirror test checks every constant of the source type has a root
// constant of the same value and the other way round, so a state, Via or
// audit action added below is not left unnamed in the public API.
type Enum struct {
	// Name is the root type, Source the mirrored type qualified by its
	// package name.
	Name, Source string
	// Skip lists source constants the root does not name, each with the
	// reason.
	Skip map[string]string
}

// Enums returns every mirrored enumeration.
func Enums() []Enum {
	return []Enum{
		{Name: "JobState", Source: "job.State"},
		{Name: "RetryCause", Source: "job.RetryCause"},
		{Name: "CancelCause", Source: "job.CancelCause"},
		{Name: "TerminalCause", Source: "job.TerminalCause"},
		{Name: "DependencyMode", Source: "job.DependencyMode"},
		{Name: "WorkflowStatus", Source: "job.WorkflowStatus"},
		{Name: "WorkflowRetryScope", Source: "job.WorkflowRetryScope"},
		{Name: "Via", Source: "core.Via"},
		{Name: "SkipReason", Source: "core.SkipReason"},
		{Name: "CatchUpPolicy", Source: "core.CatchUpPolicy"},
		{Name: "AuditAction", Source: "store.AuditAction"},
		{Name: "OccurrenceKind", Source: "store.OccurrenceKind"},
	}
}
