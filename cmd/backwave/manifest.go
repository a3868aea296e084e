package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
)

func manifestCommand() *cli.Command {
	return &cli.Command{
		Name:      "manifest",
		Usage:     "print the Job Manifest of the demo's handlers as JSON Schema",
		UsageText: "backwave manifest",
		Description: "Prints, as a JSON Schema (draft 2020-12) document, every Wire Name the demo registers and\n" +
			"the payload its handler's args type decodes, for code in other languages that enqueues through\n" +
			"the SQL enqueue API (docs/other-languages.md): the document validates one job object of\n" +
			"enqueue_many. An application prints its own handlers' manifest with\n" +
			"Handlers.JobManifestSchema, e.g. behind a flag of its own binary, and commits it beside the\n" +
			"Job Manifest its tests check.",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			h, err := demoHandlers()
			if err != nil {
				return err
			}
			b, err := h.JobManifestSchema()
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.Root().Writer, string(b))
			return err
		},
	}
}
