package workflow_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/workflow"
)

// Upload is the Workflow Input: the constant every Step can read.
type Upload struct {
	Image string `json:"image"`
}

// Size and Thumb are Job Output types.
type (
	Size struct {
		W int `json:"w"`
		H int `json:"h"`
	}
	Thumb struct {
		File string `json:"file"`
	}
)

// The Steps: each embeds the marker that declares its output type.
type (
	Probe struct {
		workflow.Step[Size]
	}
	Resize struct {
		workflow.Step[Thumb]
		Width int `json:"width"`
	}
	Publish struct {
		workflow.StepNoOutput
	}
	Scan struct {
		workflow.Step[bool]
	}
	Notify struct {
		workflow.StepNoOutput
		To string `json:"to"`
	}
)

func (Probe) WireName() string   { return "example.probe" }
func (Resize) WireName() string  { return "example.resize" }
func (Publish) WireName() string { return "example.publish" }
func (Scan) WireName() string    { return "example.scan" }
func (Notify) WireName() string  { return "example.notify" }

// Thumbnails is a Workflow Definition: probe, then one resize per width
// (fan-out), then publish once every resize is done (fan-in) — a diamond.
type Thumbnails struct{}

func (Thumbnails) Name() string { return "thumbnails" }

func (Thumbnails) Build(b *workflow.Builder[Upload], in Upload) error {
	probe := workflow.Add(b, Probe{})
	sizes := workflow.FanOut(b, probe, []Resize{{Width: 320}, {Width: 1280}})
	workflow.FanIn(b, Publish{}, []workflow.Parent{sizes[0], sizes[1]})
	return nil
}

// Ingest splices Thumbnails into its own graph, after a virus scan, as one
// flat graph, and notifies the uploader when the thumbnails are out.
type Ingest struct{}

func (Ingest) Name() string { return "ingest" }

func (Ingest) Build(b *workflow.Builder[Upload], in Upload) error {
	scan := workflow.Add(b, Scan{})
	thumbs := workflow.Splice(b, Thumbnails{}, in, workflow.After(scan))
	workflow.Then(b, thumbs, Notify{To: "uploader@example.com"})
	return nil
}

// Enqueue a Workflow Definition that splices another, and run it: each
// handler reads the Workflow Input apart from its Step's own args, sets its
// typed Job Output, and reads its ancestors' typed outputs by Step type and
// name.
//
// Both reads and writes are checked by the compiler against the output type
// each Step declares. In Resize's handler, neither of these compiles:
//
//	workflow.SetOutput(j, Size{W: 1})                // Resize declares Step[Thumb], not Step[Size]
//	var s Size
//	s, _, _ = workflow.Output(ctx, reader, j, workflow.Ancestor[Resize]("0")) // a Resize's output is a Thumb
//
// nor does workflow.SetOutput in Publish's handler (StepNoOutput), nor
// workflow.Output of a Publish. Whether the Step a Key names is an
// ancestor at all is known only at run time: Output reports it absent.
func Example() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	reader, err := workflow.NewReader(st)
	if err != nil {
		panic(err)
	}
	handlers := backwave.NewHandlers()
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Scan]) error {
		return workflow.SetOutput(j, true)
	})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Probe]) error {
		in, ok, err := workflow.Input[Upload](j)
		if err != nil || !ok || in.Image == "" {
			return fmt.Errorf("no image to probe: %v", err)
		}
		return workflow.SetOutput(j, Size{W: 4000, H: 3000})
	})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Resize]) error {
		in, _, err := workflow.Input[Upload](j)
		if err != nil {
			return err
		}
		size, ok, err := workflow.Output(ctx, reader, j, workflow.Ancestor[Probe]())
		if err != nil || !ok {
			return fmt.Errorf("no size: %v", err)
		}
		h := size.H * j.Args.Width / size.W
		return workflow.SetOutput(j, Thumb{File: fmt.Sprintf("%s-%dx%d.webp", strings.TrimSuffix(in.Image, ".png"), j.Args.Width, h)})
	})
	published := make(chan string, 1)
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Publish]) error {
		var files []string
		for _, name := range []string{"0", "1"} {
			th, ok, err := workflow.Output(ctx, reader, j, workflow.Ancestor[Resize](name))
			if err != nil {
				return err
			}
			if ok {
				files = append(files, th.File)
			}
		}
		slices.Sort(files)
		published <- strings.Join(files, " ")
		return nil
	})
	done := make(chan struct{})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Notify]) error {
		clean, _, err := workflow.Output(ctx, reader, j, workflow.Ancestor[Scan]())
		if err != nil {
			return err
		}
		in, _, err := workflow.Input[Upload](j)
		if err != nil {
			return err
		}
		// From the top level, the spliced Steps go by their prefixed names.
		big, _, err := workflow.Output(ctx, reader, j, workflow.Ancestor[Resize]("thumbnails.1"))
		if err != nil {
			return err
		}
		fmt.Printf("published: %s\n", <-published)
		fmt.Printf("notify %s: %s scanned clean=%v, large %s\n", j.Args.To, in.Image, clean, big.File)
		close(done)
		return nil
	})

	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: handlers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	run, err := workflow.Enqueue(ctx, client, Ingest{}, Upload{Image: "cat.png"})
	if err != nil {
		panic(err)
	}
	for i, s := range run.Steps {
		fmt.Printf("member %d: %s after %v\n", i, s.Key(), s.Parents)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		panic(err)
	}
	admin, err := client.Admin("example")
	if err != nil {
		panic(err)
	}
	w, err := admin.WorkflowStatus(ctx, run.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(w.Name, w.Status, w.Members, "members")
	// Output:
	// member 0: example.scan after []
	// member 1: example.probe#thumbnails after [0]
	// member 2: example.resize#thumbnails.0 after [1]
	// member 3: example.resize#thumbnails.1 after [1]
	// member 4: example.publish#thumbnails after [2 3]
	// member 5: example.notify after [4]
	// published: cat-1280x960.webp cat-320x240.webp
	// notify uploader@example.com: cat.png scanned clean=true, large cat-1280x960.webp
	// ingest succeeded 6 members
}
