package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printTable writes items as aligned columns under header, one line per
// item as row formats it (tab-separated), or the line empty ("(no jobs)")
// when there are none: the one table layout of every list command.
func printTable[T any](w io.Writer, empty, header string, items []T, row func(T) string) error {
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, empty)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, row(it))
	}
	return tw.Flush()
}
