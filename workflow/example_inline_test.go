package workflow_test

import (
	"fmt"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/workflow"
)

// The inline form: a one-off graph built on the spot, here prepared to show
// what it lowers to — one member per Step, in the order they were added,
// each naming its parents by index.
func ExampleNew() {
	b := workflow.New("resize-once", Upload{Image: "dog.png"})
	probe := workflow.Add(b, Probe{})
	small := workflow.Then(b, probe, Resize{Width: 64}, workflow.Named("small"))
	large := workflow.Then(b, probe, Resize{Width: 2048}, workflow.Named("large"), workflow.With(backwave.WithQueue("big")))
	workflow.FanIn(b, Publish{}, []workflow.Parent{small, large}, workflow.WithMode(backwave.OnAnyTerminal))
	p, err := b.Prepare()
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name)
	for i, s := range p.Steps {
		fmt.Printf("%d %s after %v (%s)\n", i, s.Key(), s.Parents, s.Mode)
	}

	// A mistake is an error from Prepare, never a panic.
	bad := workflow.New("twice", workflow.None{})
	workflow.Add(bad, Probe{})
	workflow.Add(bad, Probe{})
	_, err = bad.Prepare()
	fmt.Println(err)
	// Output:
	// resize-once
	// 0 example.probe after [] (on_success)
	// 1 example.resize#small after [0] (on_success)
	// 2 example.resize#large after [0] (on_success)
	// 3 example.publish after [1 2] (on_any_terminal)
	// workflow "twice": invalid workflow: invalid job: Step example.probe (workflow_test.Probe) is added twice: name one of them with Named
}
