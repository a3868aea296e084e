package vtime_test

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/vtime"
)

func ExampleManual() {
	clock := vtime.NewManual(vtime.Epoch)
	clock.Advance(36 * time.Hour)
	fmt.Println(clock.Now().Format(time.RFC3339))

	err := clock.Set(vtime.Epoch)
	fmt.Println(err != nil)
	// Output:
	// 2000-01-02T12:00:00Z
	// true
}
