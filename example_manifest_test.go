package backwave_test

import (
	"context"
	"fmt"
	"log"

	"github.com/backwave/backwave"
)

// WelcomeEmail is the args type of a job other languages enqueue through
// the SQL enqueue API.
type WelcomeEmail struct {
	To   string `json:"to"`
	Name string `json:"name,omitempty"`
}

func (WelcomeEmail) WireName() string { return "mail.welcome" }

func (WelcomeEmail) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "mail", MaxAttempts: 5}
}

// Publish the registered handlers' Job Manifest as JSON Schema, for code in
// other languages to validate its payloads against before it enqueues
// (docs/other-languages.md).
func ExampleHandlers_JobManifestSchema() {
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[WelcomeEmail]) error { return nil }); err != nil {
		log.Fatal(err)
	}
	schema, err := h.JobManifestSchema()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(schema))
	// Output:
	// {
	//   "$defs": {
	//     "mail.welcome": {
	//       "additionalProperties": false,
	//       "properties": {
	//         "name": {
	//           "type": "string"
	//         },
	//         "to": {
	//           "type": "string"
	//         }
	//       },
	//       "required": [
	//         "to"
	//       ],
	//       "type": "object",
	//       "x-backwave-max-attempts": 5,
	//       "x-backwave-queue": "mail",
	//       "x-backwave-wire-name": "mail.welcome"
	//     }
	//   },
	//   "$schema": "https://json-schema.org/draft/2020-12/schema",
	//   "description": "One job of enqueue_many: a registered Wire Name and the payload its handler's args type decodes. $defs holds each Wire Name's payload schema.",
	//   "oneOf": [
	//     {
	//       "properties": {
	//         "payload": {
	//           "$ref": "#/$defs/mail.welcome"
	//         },
	//         "wire_name": {
	//           "const": "mail.welcome"
	//         }
	//       }
	//     }
	//   ],
	//   "properties": {
	//     "wire_name": {
	//       "enum": [
	//         "mail.welcome"
	//       ]
	//     }
	//   },
	//   "required": [
	//     "wire_name",
	//     "payload"
	//   ],
	//   "title": "BackWave Job Manifest",
	//   "type": "object"
	// }
}
