package backwave

import "github.com/backwave/backwave/shell"

// PumpConfigs returns the configuration each of c's Pumps runs with, in
// order, with every default filled.
func PumpConfigs(c *Client) []shell.Config {
	out := make([]shell.Config, len(c.pumps))
	for i, p := range c.pumps {
		out[i] = p.Config()
	}
	return out
}

// FreshNotices gives c a once-per-process notice state of its own, shared
// with the other Clients passed with it, as if they ran in a new process.
func FreshNotices(cs ...*Client) {
	n := &startNotices{}
	for _, c := range cs {
		c.notices = n
	}
}
