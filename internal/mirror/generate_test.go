package mirror

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// TestOutputCurrent checks the checked-in mirror_gen.go is what the table
// generates now.
func TestOutputCurrent(t *testing.T) {
	t.Parallel()
	got, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, Output))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	line := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(end of file)"
	}
	t.Errorf("%s is not what internal/mirror/table.go generates (run go generate in the module root); first difference at line %d:\n generated: %s\nchecked in: %s",
		Output, i+1, line(g), line(w))
}

// TestGenerateRefuses plants each kind of table mistake and checks the
// generator names it instead of writing a mirror that drops a field.
func TestGenerateRefuses(t *testing.T) {
	t.Parallel()
	edit := func(name string, f func(*Mirror)) []Mirror {
		table := Table()
		i := slices.IndexFunc(table, func(m Mirror) bool { return m.Name == name })
		if i < 0 {
			t.Fatalf("no mirror %s", name)
		}
		f(&table[i])
		return table
	}
	withoutField := func(name string) func(*Mirror) {
		return func(m *Mirror) {
			m.Fields = slices.DeleteFunc(slices.Clone(m.Fields), func(f Field) bool { return f.Name == name })
		}
	}
	withoutConv := func(source string) []Conv {
		return slices.DeleteFunc(Convs(), func(c Conv) bool { return c.Source == source })
	}
	withoutFrom := func(mirror string) []Conv {
		convs := Convs()
		for i := range convs {
			if convs[i].Mirror == mirror {
				convs[i].From = ""
			}
		}
		return convs
	}
	for _, tc := range []struct {
		name  string
		table []Mirror
		convs []Conv
		want  string
	}{
		{"field forgotten", edit("Transition", withoutField("FailureDetail")), nil,
			"source field store.Transition.FailureDetail does not arrive"},
		{"computed field's input forgotten", edit("JobInfo", func(m *Mirror) {
			for i := range m.Fields {
				if m.Fields[i].Name == "Ceiling" {
					m.Fields[i].Uses = []string{"MaxAttempts"}
				}
			}
		}), nil, "source field job.Job.AttemptBase does not arrive"},
		{"field the source lacks", edit("Transition", func(m *Mirror) {
			m.Fields = append(slices.Clone(m.Fields), Field{Name: "Worker"})
		}), nil, "field Worker names source field Worker, which store.Transition does not have"},
		{"drop without a reason", edit("JobInfo", func(m *Mirror) { m.Drop = map[string]string{"TraceContext": ""} }), nil,
			"dropped source field TraceContext needs its reason"},
		{"dropped and mirrored", edit("AttemptInfo", func(m *Mirror) { m.Drop["TraceContext"] = "planted" }), nil,
			"source field TraceContext is both"},
		{"type the table does not cover", nil, withoutConv(Module + "/core.Via"),
			"the type table (Convs) has no entry for " + Module + "/core.Via"},
		{"reverse without a way back", nil, withoutFrom("[]Tag"),
			"field Tags: the type table converts []" + Module + "/job.Tag to []Tag but not back"},
		{"source that is not a struct", edit("Transition", func(m *Mirror) { m.Source = "job.State" }), nil,
			"job.State is not a struct"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table, convs := tc.table, tc.convs
			if table == nil {
				table = Table()
			}
			if convs == nil {
				convs = Convs()
			}
			_, err := generate(root, table, convs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
