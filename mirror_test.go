package backwave

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/mirror"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
)

// TestMirrorsCarryEveryField checks each converter of mirror_gen.go by
// reflection, whatever the generator did: every field of the source type
// that the table (internal/mirror/table.go) does not drop arrives in the
// mirror, every dropped one does not, and every field of the mirror comes
// from some source field.
func TestMirrorsCarryEveryField(t *testing.T) {
	t.Parallel()
	drops := map[string]map[string]string{}
	for _, m := range mirror.Table() {
		drops[m.Name] = m.Drop
	}
	for name, check := range map[string]func(*testing.T, map[string]string){
		"JobInfo":         carries(jobInfoOf),
		"Progress":        carries(func(s job.Progress) Progress { return *progressOf(&s) }),
		"JobCursor":       carries(func(s job.Cursor) JobCursor { return *jobCursorOf(&s) }),
		"AttemptInfo":     carries(infoOf),
		"Transition":      carries(transitionOf),
		"JobFilter":       carries(JobFilter.store),
		"QueueInfo":       carries(queueInfoOf),
		"QueueStateCount": carries(queueStateCountOf),
		"TagCount":        carries(tagCountOf),
		"DependencyInfo":  carries(dependencyInfoOf),
		"ParentEdge":      carries(parentEdgeOf),
		"AuditEntry":      carries(auditEntryOf),
		"AncestorOutput":  carries(ancestorOutputOf),
		"Occurrence":      carries(occurrenceOf),
		"WorkflowInfo":    carries(workflowInfoOf),
		"WorkflowMember":  carries(workflowMemberOf),
		"PumpStats":       carries(pumpStatsOf),
		"StoreError":      carries(func(s shell.StoreError) StoreError { return *storeErrorOf(&s) }),
		"QueueStats":      carries(queueStatsOf),
	} {
		drop, ok := drops[name]
		if !ok {
			t.Errorf("%s is not in the mirror table", name)
			continue
		}
		delete(drops, name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, drop)
		})
	}
	for name := range drops {
		t.Errorf("mirror %s of the table has no check here", name)
	}
	if progressOf(nil) != nil || jobCursorOf(nil) != nil || storeErrorOf(nil) != nil {
		t.Error("a nil source does not convert to a nil mirror")
	}
}

// carries returns a check of conv: it sets one field of the source at a
// time, in three fillings (bools true, then false, with every other value
// changed each time, so a computed field such as WorkflowInfo.Status meets
// a live and a terminal job.State), and looks at which fields of the
// result differ from the conversion of the zero source.
func carries[S, M any](conv func(S) M) func(*testing.T, map[string]string) {
	return func(t *testing.T, drop map[string]string) {
		st, mt := reflect.TypeFor[S](), reflect.TypeFor[M]()
		var zero S
		base := reflect.ValueOf(conv(zero))
		reached := map[string]bool{}
		for i := range st.NumField() {
			f := st.Field(i)
			if !f.IsExported() {
				continue
			}
			var changed []string
			for _, fill := range []int{1, 2, 4} {
				var s S
				v, err := filled(f.Type, fill)
				if err != nil {
					t.Fatalf("%s.%s: %v", st, f.Name, err)
				}
				reflect.ValueOf(&s).Elem().Field(i).Set(v)
				got := reflect.ValueOf(conv(s))
				for k := range mt.NumField() {
					if !reflect.DeepEqual(got.Field(k).Interface(), base.Field(k).Interface()) {
						changed = append(changed, mt.Field(k).Name)
						reached[mt.Field(k).Name] = true
					}
				}
			}
			_, dropped := drop[f.Name]
			switch {
			case dropped && len(changed) > 0:
				t.Errorf("%s.%s is dropped by the mirror table, yet it reaches %s field(s) %v", st, f.Name, mt, changed)
			case !dropped && len(changed) == 0:
				t.Errorf("%s.%s does not arrive in %s", st, f.Name, mt)
			}
		}
		for k := range mt.NumField() {
			if name := mt.Field(k).Name; !reached[name] {
				t.Errorf("%s.%s is set by no field of %s", mt, name, st)
			}
		}
	}
}

// filled returns a non-zero value of type t: numbers are fill, strings and
// times differ with it, bools are true for fill 1 and false otherwise.
func filled(t reflect.Type, fill int) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	switch {
	case t == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Unix(int64(1_000_000*fill), 0).UTC()))
		return v, nil
	case t == reflect.TypeFor[error]():
		v.Set(reflect.ValueOf(errors.New("planted")))
		return v, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(fill == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(fill))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(fill))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(fill) / 4)
	case reflect.String:
		v.SetString(string(rune('a' + fill)))
	case reflect.Slice:
		e, err := filled(t.Elem(), fill)
		if err != nil {
			return v, err
		}
		v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), e))
	case reflect.Map:
		k, err := filled(t.Key(), fill)
		if err != nil {
			return v, err
		}
		e, err := filled(t.Elem(), fill)
		if err != nil {
			return v, err
		}
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(k, e)
	case reflect.Pointer:
		e, err := filled(t.Elem(), fill)
		if err != nil {
			return v, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		v.Set(p)
	case reflect.Struct:
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			e, err := filled(t.Field(i).Type, fill)
			if err != nil {
				return v, err
			}
			v.Field(i).Set(e)
		}
	default:
		return v, errors.New("no filling for " + t.String())
	}
	return v, nil
}
