package permission

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
)

func TestZeroPolicyGrantsViewOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var pol Policy
	for _, p := range All() {
		if got, want := pol.Allowed(ctx, p), p == View; got != want {
			t.Errorf("zero Policy: Allowed(%s) = %v, want %v", p, got, want)
		}
	}
	if _, err := pol.Actor(ctx); err == nil {
		t.Error("zero Policy named an Actor; want writes refused")
	}
}

func TestReadOnlyDeniesWrites(t *testing.T) {
	t.Parallel()
	pol := Policy{Allow: func(context.Context, Permission) bool { return true }, ReadOnly: true}
	for _, p := range All() {
		want := p == View || p == ViewSensitiveData
		if got := pol.Allowed(context.Background(), p); got != want {
			t.Errorf("ReadOnly: Allowed(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestEveryActionHasAPermission(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, a := range Actions() {
		if a.Permission() == 0 {
			t.Errorf("%s has no Permission", a)
		}
		if a.Permission() == View || a.Permission() == ViewSensitiveData {
			t.Errorf("%s is gated by a read permission %s", a, a.Permission())
		}
		if seen[a.String()] {
			t.Errorf("action name %q used twice", a)
		}
		seen[a.String()] = true
	}
	if Action(0).Permission() != 0 || Action(200).Permission() != 0 {
		t.Error("an undeclared Action has a Permission")
	}
}

func TestParseRoundTrips(t *testing.T) {
	t.Parallel()
	for _, p := range All() {
		got, err := Parse(p.String())
		if err != nil || got != p {
			t.Errorf("Parse(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := Parse("Admin"); err == nil {
		t.Error("Parse(Admin) succeeded")
	}
	if (Policy{Allow: func(context.Context, Permission) bool { return true }}).Allowed(context.Background(), 0) {
		t.Error("Permission 0 allowed")
	}
}

func TestActorAndRequest(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	ctx := WithRequest(context.Background(), r)
	if Request(ctx) != r || Request(context.Background()) != nil {
		t.Fatal("Request does not return what WithRequest attached")
	}
	cases := []struct {
		name    string
		resolve func(context.Context) (string, error)
		want    string
	}{
		{"named", func(ctx context.Context) (string, error) { return Request(ctx).Method + "-user", nil }, "GET-user"},
		{"empty", func(context.Context) (string, error) { return "", nil }, ""},
		{"error", func(context.Context) (string, error) { return "x", errors.New("no session") }, ""},
	}
	for _, c := range cases {
		got, err := Policy{ResolveActor: c.resolve}.Actor(ctx)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s: Actor = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
