package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// Extension is a Dashboard Extension: a surface a separately installed
// package contributes to the dashboard without the dashboard knowing about
// it. The extension supplies only the route shape, the template, the data
// loader and the action handler; the dashboard keeps the View gate, the
// Permission and cross-origin checks on every action, the redirect after
// it, and live refresh.
type Extension struct {
	// Name identifies the extension: lower-case letters, digits and
	// dashes. Its routes live below /x/<Name>.
	Name string
	// Nav are navigation entries, after the built-in ones.
	Nav []NavEntry
	// Banner, if set, is shown on every page (as text, escaped).
	Banner string
	// Pages are GET pages, rendered in the dashboard's frame.
	Pages []ExtensionPage
	// Actions are POST Operator Actions.
	Actions []ExtensionAction
}

// NavEntry is one navigation entry of an Extension.
type NavEntry struct {
	Label string
	// Page is the Path of one of the extension's Pages.
	Page string
}

// ExtensionPage is a GET page of an Extension, served at
// /x/<extension>/<Path> below the prefix behind the View gate.
type ExtensionPage struct {
	// Path is the page's path below the extension, such as "" (the
	// extension's root) or "workflows/{id}": ServeMux wildcards are
	// allowed, and PageRequest.PathValue reads them.
	Path  string
	Title string
	// Template is the page body in html/template syntax: it is executed
	// with a PageData and may use the dashboard's partials ("tags",
	// "state") and its funcs.
	Template string
	// Load reads what the page shows. An error wrapping
	// backwave.ErrNotFound answers 404, ErrInvalidParams 400; any other is
	// logged and answered 500.
	Load func(ctx context.Context, req PageRequest) (any, error)
}

// ExtensionAction is a POST Operator Action of an Extension, served at
// /x/<extension>/<Path> below the prefix.
type ExtensionAction struct {
	Path string
	// Permission gates the action: one of the write Permissions
	// (Requeue, Cancel, TriggerSchedule, PauseQueue); New refuses any
	// other, so an action cannot be registered without a gate.
	Permission permission.Permission
	// Handle performs the action through req.Admin, which records the
	// request's Actor, and returns where to send the browser: the Path of
	// one of the extension's pages (with a query if it likes).
	Handle func(ctx context.Context, req ActionRequest) (redirect string, err error)
}

// PageRequest is what a page's Load sees of its request.
type PageRequest struct {
	// Admin reads the Monitor.
	Admin *backwave.Admin
	Query url.Values
	// PathValue returns a wildcard of the page's Path.
	PathValue func(name string) string
	// ViewSensitiveData says the caller may see payloads, Failure Detail
	// and Job Output; without it Load must not return them.
	ViewSensitiveData bool
}

// ActionRequest is what an action's Handle sees of its request.
type ActionRequest struct {
	// Admin acts as the Actor the Policy's ResolveActor named.
	Admin     *backwave.Admin
	Form      url.Values
	PathValue func(name string) string
}

// PageData is what an extension page's Template is executed with.
type PageData struct {
	// Data is what Load returned.
	Data any
	// Prefix is the dashboard's path prefix; links to the extension's own
	// pages start with Base.
	Prefix string
	Base   string
	// Can says which write Permissions the caller holds, so the page
	// shows only the controls it may use.
	Can Capabilities
}

var extensionName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// mountExtensions checks and registers every extension.
func (s *server) mountExtensions(exts []Extension) error {
	seen := map[string]bool{}
	for _, e := range exts {
		if !extensionName.MatchString(e.Name) {
			return fmt.Errorf("dashboard: extension name %q: use lower-case letters, digits and dashes", e.Name)
		}
		if seen[e.Name] {
			return fmt.Errorf("dashboard: extension %q registered twice", e.Name)
		}
		seen[e.Name] = true
		if err := s.mountExtension(e); err != nil {
			return fmt.Errorf("dashboard: extension %q: %w", e.Name, err)
		}
	}
	return nil
}

func extPath(name, p string) (string, error) {
	if strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.ContainsAny(p, "?#\\ ") {
		return "", fmt.Errorf("path %q: give it relative to the extension, without a leading slash", p)
	}
	if p == "" {
		return "/x/" + name + "/{$}", nil
	}
	return "/x/" + name + "/" + p, nil
}

func (s *server) mountExtension(e Extension) error {
	base := s.url("/x/" + e.Name + "/")
	pages := map[string]bool{}
	for i, pg := range e.Pages {
		if pg.Load == nil {
			return fmt.Errorf("page %q has no Load", pg.Path)
		}
		if pages[pg.Path] {
			return fmt.Errorf("page %q registered twice", pg.Path)
		}
		pages[pg.Path] = true
		route, err := extPath(e.Name, pg.Path)
		if err != nil {
			return err
		}
		t, err := s.pages["_base"].Clone()
		if err != nil {
			return fmt.Errorf("page %q: %w", pg.Path, err)
		}
		if _, err := t.New("extension-body").Parse(pg.Template); err != nil {
			return fmt.Errorf("page %q: template: %w", pg.Path, err)
		}
		if _, err := t.New("content").Parse(`{{template "extension-body" .Data}}`); err != nil {
			return fmt.Errorf("page %q: template: %w", pg.Path, err)
		}
		key := fmt.Sprintf("x/%s/%d", e.Name, i)
		s.pages[key] = t
		navKey := "/x/" + e.Name + "/" + pg.Path
		load, title := pg.Load, pg.Title
		err = s.get(route, e.Name, func(r *http.Request, c Capabilities) (page, error) {
			data, err := load(permission.WithRequest(r.Context(), r), PageRequest{
				Admin: s.reader, Query: r.URL.Query(), PathValue: r.PathValue, ViewSensitiveData: c.Sensitive,
			})
			if err != nil {
				return page{}, err
			}
			return page{template: key, title: title, data: PageData{Data: data, Prefix: s.prefix, Base: base, Can: c}, nav: navKey}, nil
		})
		if err != nil {
			return err
		}
	}
	for _, a := range e.Actions {
		if a.Handle == nil {
			return fmt.Errorf("action %q has no Handle", a.Path)
		}
		route, err := extPath(e.Name, a.Path)
		if err != nil {
			return err
		}
		handle, name := a.Handle, e.Name
		err = s.post(route, e.Name, a.Permission, func(r *http.Request, admin *backwave.Admin) (string, error) {
			to, err := handle(permission.WithRequest(r.Context(), r), ActionRequest{Admin: admin, Form: r.PostForm, PathValue: r.PathValue})
			if err != nil {
				return "", err
			}
			return "/x/" + name + "/" + strings.TrimPrefix(to, "/"), nil
		})
		if err != nil {
			return err
		}
	}
	for _, n := range e.Nav {
		if !pages[n.Page] {
			return fmt.Errorf("nav entry %q names no page of the extension", n.Label)
		}
		s.nav = append(s.nav, navItem{Label: n.Label, Path: "/x/" + e.Name + "/" + n.Page})
	}
	if e.Banner != "" {
		s.banners = append(s.banners, e.Banner)
	}
	return nil
}
