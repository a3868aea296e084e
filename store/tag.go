package store

import (
	"encoding/json"
	"fmt"

	"github.com/backwave/backwave/job"
)

// EncodeTags is the text form a store keeps a Tag set in where one column
// holds them all (a schedule's template; a job's Tags aggregated in one
// read): a JSON array of [key, value] pairs, a Label's key empty, e.g.
// [["","nightly"],["team","ops"]]. The kinds stay structurally apart, so a
// colon or an equals sign in a Tag is ordinary data. SQL that builds the
// same text (PostgreSQL's json_build_array(key, value)) reads back with
// DecodeTags.
func EncodeTags(tags []job.Tag) string {
	pairs := make([][2]string, len(tags))
	for i, t := range tags {
		pairs[i] = [2]string{t.Key, t.Value}
	}
	b, err := json.Marshal(pairs)
	if err != nil { // a [][2]string always marshals
		panic(fmt.Sprintf("store: encode tags: %v", err))
	}
	return string(b)
}

// DecodeTags is the inverse of EncodeTags. It returns the Tags as a set
// (job.NormalizeTags), nil for none, whatever order the text holds them
// in.
func DecodeTags(text string) ([]job.Tag, error) {
	var pairs [][2]string
	if err := json.Unmarshal([]byte(text), &pairs); err != nil {
		return nil, fmt.Errorf("store: decode tags %.64q: %w", text, err)
	}
	tags := make([]job.Tag, len(pairs))
	for i, p := range pairs {
		tags[i] = job.Tag{Key: p[0], Value: p[1]}
	}
	return job.NormalizeTags(tags), nil
}
