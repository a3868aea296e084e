package workflow_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/workflow"
)

// Steps of the tests.
type (
	thumb struct {
		URL string `json:"url"`
	}
	fetch struct {
		workflow.Step[int]
		URL string `json:"url"`
	}
	resize struct {
		workflow.Step[thumb]
		Width int `json:"width"`
	}
	publish struct {
		workflow.StepNoOutput
	}
	ptrStep struct {
		workflow.StepNoOutput
		N int `json:"n"`
	}
	taggedStep struct {
		workflow.StepNoOutput `json:"marker"`
	}
	dropsMarker struct {
		workflow.StepNoOutput
	}
	order struct {
		ID      string `json:"id"`
		Premium bool   `json:"premium"`
	}
)

func (fetch) WireName() string       { return "test.fetch" }
func (resize) WireName() string      { return "test.resize" }
func (publish) WireName() string     { return "test.publish" }
func (*ptrStep) WireName() string    { return "test.ptr" }
func (taggedStep) WireName() string  { return "test.tagged" }
func (dropsMarker) WireName() string { return "test.drops" }

func (dropsMarker) MarshalJSON() ([]byte, error) { return []byte(`{}`), nil }

// images is a Definition: fetch, then one resize per width, then publish.
type images struct{ widths []int }

func (images) Name() string { return "images" }

func (d images) Build(b *workflow.Builder[order], in order) error {
	f := workflow.Add(b, fetch{URL: "img/" + in.ID})
	steps := make([]resize, len(d.widths))
	for i, w := range d.widths {
		steps[i] = resize{Width: w}
	}
	sizes := workflow.FanOut(b, f, steps)
	parents := make([]workflow.Parent, len(sizes))
	for i, s := range sizes {
		parents[i] = s
	}
	workflow.FanIn(b, publish{}, parents)
	return nil
}

type payloadView struct {
	M struct {
		Input json.RawMessage `json:"input"`
		Name  string          `json:"name"`
	} `json:"backwave_workflow"`
	URL   string `json:"url"`
	Width int    `json:"width"`
}

func payloadOf(t *testing.T, p backwave.EnqueueParams) payloadView {
	t.Helper()
	raw, err := json.Marshal(p.Args)
	if err != nil {
		t.Fatal(err)
	}
	var v payloadView
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The diamond lowers to one graph in Step order, each edge an in-batch
// parent index, the Workflow Input baked into every member.
func TestPrepareDiamond(t *testing.T) {
	t.Parallel()
	p, err := workflow.Prepare[order](images{widths: []int{320, 640}}, order{ID: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "images" {
		t.Errorf("name %q", p.Name)
	}
	want := []struct {
		key     string
		parents []int
	}{
		{"test.fetch", nil},
		{"test.resize#0", []int{0}},
		{"test.resize#1", []int{0}},
		{"test.publish", []int{1, 2}},
	}
	if len(p.Steps) != len(want) || len(p.Params) != len(want) {
		t.Fatalf("%d steps, %d params; want %d", len(p.Steps), len(p.Params), len(want))
	}
	for i, w := range want {
		st := p.Steps[i]
		if st.Key() != w.key || !slices.Equal(st.Parents, w.parents) {
			t.Errorf("step %d: %s after %v; want %s after %v", i, st.Key(), st.Parents, w.key, w.parents)
		}
		if got := len(p.Params[i].Options); (got > 0) != (len(w.parents) > 0) {
			t.Errorf("step %d: %d options; want the parents option only when it has parents", i, got)
		}
		pv := payloadOf(t, p.Params[i])
		if string(pv.M.Input) != `{"id":"o1","premium":false}` {
			t.Errorf("step %d: baked input %s", i, pv.M.Input)
		}
		if pv.M.Name != p.Steps[i].Name {
			t.Errorf("step %d: baked name %q, step name %q", i, pv.M.Name, p.Steps[i].Name)
		}
	}
	if pv := payloadOf(t, p.Params[2]); pv.Width != 640 {
		t.Errorf("second resize has width %d: the Step's own args must survive the bake", pv.Width)
	}
	if pv := payloadOf(t, p.Params[0]); pv.URL != "img/o1" {
		t.Errorf("fetch url %q", pv.URL)
	}
}

// parentSplice splices images after a root Step, and publishes after it.
type parentSplice struct{ twice bool }

func (parentSplice) Name() string { return "order" }

func (d parentSplice) Build(b *workflow.Builder[workflow.None], _ workflow.None) error {
	root := workflow.Add(b, fetch{URL: "root"})
	child := workflow.Splice(b, images{widths: []int{1, 2}}, order{ID: "c"}, workflow.After(root), workflow.With(backwave.WithQueue("img")))
	parents := []workflow.Parent{child}
	if d.twice {
		parents = append(parents, workflow.Splice(b, images{widths: []int{3}}, order{ID: "d"}, workflow.After(root), workflow.Named("more")))
	}
	workflow.FanIn(b, publish{}, parents)
	return nil
}

// A spliced Definition joins the one flat graph: its Steps prefixed, its
// roots below the splice's parent, its leaves the parents of what follows,
// its own input baked into its Steps and none into the parent's.
func TestPrepareSplice(t *testing.T) {
	t.Parallel()
	p, err := workflow.Prepare[workflow.None](parentSplice{twice: true}, workflow.None{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range p.Steps {
		got = append(got, st.Key()+" <- "+joinInts(st.Parents))
	}
	want := []string{
		"test.fetch <- ",
		"test.fetch#images <- 0",
		"test.resize#images.0 <- 1",
		"test.resize#images.1 <- 1",
		"test.publish#images <- 2,3",
		"test.fetch#more <- 0",
		"test.resize#more.0 <- 5",
		"test.publish#more <- 6",
		"test.publish <- 4,7",
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if pv := payloadOf(t, p.Params[0]); len(pv.M.Input) != 0 {
		t.Errorf("the parent has no input, yet its Step carries %s", pv.M.Input)
	}
	if pv := payloadOf(t, p.Params[2]); string(pv.M.Input) != `{"id":"c","premium":false}` {
		t.Errorf("spliced Step input %s", pv.M.Input)
	}
	if pv := payloadOf(t, p.Params[6]); string(pv.M.Input) != `{"id":"d","premium":false}` {
		t.Errorf("second splice input %s", pv.M.Input)
	}
	// With applies to the spliced Steps: one more option than the parent's.
	if n := len(p.Params[1].Options); n != 2 {
		t.Errorf("spliced root has %d options; want WithQueue and its parents", n)
	}
	if n := len(p.Params[5].Options); n != 1 {
		t.Errorf("second splice's root has %d options; want its parents only", n)
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// The inline form lowers to the same prepared graph as the Definition.
func TestInlineEqualsDefinition(t *testing.T) {
	t.Parallel()
	in := order{ID: "x", Premium: true}
	named, err := workflow.Prepare[order](images{widths: []int{5}}, in)
	if err != nil {
		t.Fatal(err)
	}
	b := workflow.New("images", in)
	f := workflow.Add(b, fetch{URL: "img/x"})
	r := workflow.FanOut(b, f, []resize{{Width: 5}})
	workflow.FanIn(b, publish{}, []workflow.Parent{r[0]})
	inline, err := b.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	if inline.Name != named.Name || !slices.EqualFunc(inline.Steps, named.Steps, func(a, b workflow.PreparedStep) bool {
		return a.Key() == b.Key() && slices.Equal(a.Parents, b.Parents) && a.Mode == b.Mode
	}) {
		t.Fatalf("inline %+v\nnamed %+v", inline, named)
	}
	for i := range inline.Params {
		a, _ := json.Marshal(inline.Params[i].Args)
		c, _ := json.Marshal(named.Params[i].Args)
		if string(a) != string(c) {
			t.Errorf("member %d: inline %s, named %s", i, a, c)
		}
	}
}

// A pointer Step is baked into a copy; the caller's value is untouched.
func TestPointerStepCopied(t *testing.T) {
	t.Parallel()
	s := &ptrStep{N: 7}
	b := workflow.New("p", order{ID: "i"})
	workflow.Add(b, s, workflow.Named("one"), workflow.WithMode(backwave.OnAnyTerminal))
	p, err := b.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	if s.Workflow != nil {
		t.Errorf("the caller's Step was changed: %+v", s.Workflow)
	}
	got := p.Params[0].Args.(*ptrStep)
	if got == s || got.N != 7 || got.Workflow == nil || got.Workflow.Name != "one" {
		t.Errorf("baked copy %+v", got)
	}
}

// Mistakes are errors wrapping ErrInvalidWorkflow (and ErrInvalidJob), and
// never panics.
func TestBuildErrors(t *testing.T) {
	t.Parallel()
	other := workflow.New("other", workflow.None{})
	foreign := workflow.Add(other, fetch{})
	tests := []struct {
		name  string
		build func(b *workflow.Builder[order])
		want  string
	}{
		{"empty", func(*workflow.Builder[order]) {}, "at least one Step"},
		{"added twice", func(b *workflow.Builder[order]) {
			workflow.Add(b, fetch{})
			workflow.Add(b, fetch{URL: "again"})
		}, "test.fetch (workflow_test.fetch) is added twice"},
		{"named twice", func(b *workflow.Builder[order]) {
			workflow.Add(b, fetch{}, workflow.Named("a"))
			workflow.Add(b, fetch{}, workflow.Named("a"))
		}, `named "a"`},
		{"foreign ref", func(b *workflow.Builder[order]) {
			workflow.Then(b, foreign, resize{})
		}, "another Builder"},
		{"zero ref", func(b *workflow.Builder[order]) {
			workflow.Then(b, workflow.Ref[fetch]{}, resize{})
		}, "zero Ref"},
		{"nil parent", func(b *workflow.Builder[order]) {
			workflow.Then(b, nil, resize{})
		}, "nil parent"},
		{"nil step", func(b *workflow.Builder[order]) {
			workflow.Add[*ptrStep](b, nil)
		}, "nil Step"},
		{"empty name", func(b *workflow.Builder[order]) {
			workflow.Add(b, fetch{}, workflow.Named(""))
		}, "cannot be empty"},
		{"hash in name", func(b *workflow.Builder[order]) {
			workflow.Add(b, fetch{}, workflow.Named("a#b"))
		}, "contains '#'"},
		{"bad mode", func(b *workflow.Builder[order]) {
			workflow.Add(b, fetch{}, workflow.WithMode(9))
		}, "unknown Dependency mode"},
		{"tagged marker", func(b *workflow.Builder[order]) {
			workflow.Add(b, taggedStep{})
		}, "reserved JSON field"},
		{"marshaler drops marker", func(b *workflow.Builder[order]) {
			workflow.Add(b, dropsMarker{})
		}, "reserved JSON field"},
		{"empty fan-out", func(b *workflow.Builder[order]) {
			workflow.FanOut(b, workflow.Add(b, fetch{}), []resize(nil))
		}, "FanOut of no Steps"},
		{"empty fan-in", func(b *workflow.Builder[order]) {
			workflow.FanIn(b, publish{}, nil)
		}, "after no parents"},
		{"empty splice", func(b *workflow.Builder[order]) {
			workflow.Splice(b, emptyDef{}, workflow.None{})
		}, "adds no Steps"},
		{"splice twice", func(b *workflow.Builder[order]) {
			workflow.Splice(b, images{widths: []int{1}}, order{})
			workflow.Splice(b, images{widths: []int{1}}, order{})
		}, "added twice"},
		{"failing child", func(b *workflow.Builder[order]) {
			workflow.Splice(b, failing{}, workflow.None{})
		}, "boom"},
		{"first error kept", func(b *workflow.Builder[order]) {
			workflow.Add(b, fetch{}, workflow.Named(""))
			workflow.Add(b, fetch{}, workflow.Named("a#b"))
		}, "cannot be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := workflow.New("w", order{ID: "1"})
			tt.build(b)
			_, err := b.Prepare()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
			if !errors.Is(err, workflow.ErrInvalidWorkflow) || !errors.Is(err, backwave.ErrInvalidJob) {
				t.Errorf("error %v does not wrap ErrInvalidWorkflow and ErrInvalidJob", err)
			}
		})
	}
}

type emptyDef struct{}

func (emptyDef) Name() string                                                { return "empty" }
func (emptyDef) Build(*workflow.Builder[workflow.None], workflow.None) error { return nil }

type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) Build(*workflow.Builder[workflow.None], workflow.None) error {
	return errors.New("boom")
}

// An input that does not encode, or a nameless Workflow, is refused.
func TestBadInputAndName(t *testing.T) {
	t.Parallel()
	b := workflow.New("w", func() {})
	workflow.Add(b, fetch{})
	if _, err := b.Prepare(); err == nil || !strings.Contains(err.Error(), "does not encode") {
		t.Errorf("func input: %v", err)
	}
	b2 := workflow.New("", 1)
	workflow.Add(b2, fetch{})
	if _, err := b2.Prepare(); err == nil || !strings.Contains(err.Error(), "needs a name") {
		t.Errorf("no name: %v", err)
	}
	if _, err := workflow.Prepare[workflow.None](nil, workflow.None{}); !errors.Is(err, workflow.ErrInvalidWorkflow) {
		t.Errorf("nil Definition: %v", err)
	}
}

// FanOut names its Steps by index, under a Named prefix if given; Then
// with After gets both parents; OnAnyTerminal reaches the edge option.
func TestFanOutNamesAndModes(t *testing.T) {
	t.Parallel()
	b := workflow.New("w", workflow.None{})
	f := workflow.Add(b, fetch{})
	g := workflow.Add(b, fetch{}, workflow.Named("other"))
	rs := workflow.FanOut(b, f, []resize{{Width: 1}, {Width: 2}}, workflow.Named("size"))
	last := workflow.Then(b, rs[1], publish{}, workflow.After(g, rs[1]), workflow.WithMode(backwave.OnAnyTerminal))
	p, err := b.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Name() != "size.0" || rs[1].Name() != "size.1" || rs[1].Index() != 3 || last.Index() != 4 {
		t.Errorf("refs %q %q index %d, last %d", rs[0].Name(), rs[1].Name(), rs[1].Index(), last.Index())
	}
	st := p.Steps[4]
	if !slices.Equal(st.Parents, []int{1, 3}) || st.Mode != backwave.OnAnyTerminal {
		t.Errorf("last Step after %v in %s; want [1 3] (a parent given twice counts once) in on_any_terminal", st.Parents, st.Mode)
	}
	// The mode reaches the stored edge.
	c, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := p.Enqueue(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.Admin("test")
	if err != nil {
		t.Fatal(err)
	}
	deps, err := admin.Dependencies(t.Context(), run.Jobs[4])
	if err != nil || deps.Mode != backwave.OnAnyTerminal || len(deps.Parents) != 2 {
		t.Errorf("stored edges of the last Step: %+v %v", deps, err)
	}
}
