package backwave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

type unencodable struct{ C chan int }

func (unencodable) WireName() string { return "test.unencodable" }

type badTagArgs struct{}

func (badTagArgs) WireName() string { return "test.badtag" }
func (badTagArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Tags: []backwave.Tag{backwave.Label("")}}
}

func TestEnqueueRefusesBadInput(t *testing.T) {
	t.Parallel()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args backwave.JobArgs
		opts []backwave.EnqueueOption
	}{
		{"nil args", nil, nil},
		{"nil pointer args", (*ptrArgs)(nil), nil},
		{"empty wire name", noWireName{}, nil},
		{"payload does not encode", unencodable{C: make(chan int)}, nil},
		{"negative delay", greet{}, []backwave.EnqueueOption{backwave.WithDelay(-time.Second)}},
		{"delay and run-at", greet{}, []backwave.EnqueueOption{backwave.WithDelay(time.Second), backwave.WithRunAt(time.Now())}},
		{"negative max attempts", greet{}, []backwave.EnqueueOption{backwave.WithMaxAttempts(-1)}},
		{"bad queue", greet{}, []backwave.EnqueueOption{backwave.WithQueue(" padded ")}},
		{"bad tag", greet{}, []backwave.EnqueueOption{backwave.WithTags(backwave.Keyed("k", ""))}},
		{"bad declared tag", badTagArgs{}, nil},
		{"nil option", greet{}, []backwave.EnqueueOption{nil}},
	} {
		if _, err := c.Enqueue(ctx, tc.args, tc.opts...); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("%s: err = %v, want ErrInvalidJob", tc.name, err)
		}
	}
	// One bad job in a batch stores nothing.
	_, err = c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: greet{"a"}}, {Args: noWireName{}}})
	if !errors.Is(err, backwave.ErrInvalidJob) {
		t.Errorf("EnqueueMany err = %v", err)
	}
	if n, _ := st.JobCountByState(ctx, store.CountParams{}); len(n) != 0 {
		t.Errorf("invalid input stored jobs: %v", n)
	}
}

func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	st := newStore()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := backwave.NewClient(st, backwave.Config{Clock: fixedClock(now), MaxAttempts: 7})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids, err := c.EnqueueMany(ctx, []backwave.EnqueueParams{
		{Args: greet{"defaults"}},
		{Args: mailArgs{"declared"}},
		{Args: mailArgs{"overridden"}, Options: []backwave.EnqueueOption{
			backwave.WithQueue("urgent"), backwave.WithDelay(time.Minute), backwave.WithMaxAttempts(2),
			backwave.WithTags(backwave.Keyed("tenant", "acme"), backwave.Label("vip")),
		}},
		{Args: greet{"run-at"}, Options: []backwave.EnqueueOption{backwave.WithRunAt(now.Add(time.Hour))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]job.Job, len(ids))
	for i, id := range ids {
		got[i] = getJob(t, st, id)
	}
	if j := got[0]; j.Queue != backwave.DefaultQueue || j.MaxAttempts != 7 || j.WireName != "test.greet" || string(j.Payload) != `{"Name":"defaults"}` {
		t.Errorf("defaults: %+v", j)
	}
	if j := got[1]; j.Queue != "mail" {
		t.Errorf("declared queue: %q", j.Queue)
	}
	if j := got[2]; j.Queue != "urgent" || j.MaxAttempts != 2 || !j.ScheduledAt.Equal(now.Add(time.Minute)) || len(j.Tags) != 2 {
		t.Errorf("overridden: queue %q max %d due %v tags %v", j.Queue, j.MaxAttempts, j.ScheduledAt, j.Tags)
	}
	if j := got[3]; !j.ScheduledAt.Equal(now.Add(time.Hour)) {
		t.Errorf("run-at: due %v", j.ScheduledAt)
	}
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }
