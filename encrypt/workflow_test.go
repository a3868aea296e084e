package encrypt_test

import (
	"bytes"
	"testing"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// TestWorkflowMembersSealed: Workflow members are stored sealed, each bound
// to its own id, and read back opened (glossary, Encryption at Rest): a
// Workflow Restart, which reads the members and inserts them again, keeps
// no plaintext either.
func TestWorkflowMembersSealed(t *testing.T) {
	t.Parallel()
	raw := memstore.New(memstore.Options{})
	s := wrap(t, raw, ring(t, "k1"))
	res, err := s.WorkflowInsert(t.Context(), store.WorkflowInsertParams{Name: "sealed", InsertManyParams: store.InsertManyParams{
		Jobs: []store.NewJob{newJob("wf", "secret-root"), newJob("wf", "secret-leaf")}}})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.WorkflowMembers(t.Context(), res.Workflow)
	if err != nil || len(ms) != 2 || string(ms[0].Job.Payload) != "secret-root" || string(ms[1].Job.Payload) != "secret-leaf" {
		t.Fatalf("WorkflowMembers through the wrapper = %+v, %v", ms, err)
	}
	jobs := []store.NewJob{newJob("wf", string(ms[0].Job.Payload)), newJob("wf", string(ms[1].Job.Payload))}
	if _, err := s.WorkflowInsert(t.Context(), store.WorkflowInsertParams{Name: "sealed", RestartOf: res.Workflow,
		InsertManyParams: store.InsertManyParams{Jobs: jobs}}); err != nil {
		t.Fatal(err)
	}
	vals := rawValues(t, raw)[store.ChannelPayload]
	if len(vals) != 4 {
		t.Fatalf("%d payloads stored, want 4", len(vals))
	}
	for _, v := range vals {
		if bytes.Contains(v.Value, []byte("secret")) {
			t.Fatalf("payload %v is stored in plaintext: %q", v.Key, v.Value)
		}
	}
}
