package sim

import "testing"

// BenchmarkRun measures one seed of a 4-node, 500-job Scenario per
// iteration at each Fault Level (the VOPR Runner's throughput per core).
func BenchmarkRun(b *testing.B) {
	for _, level := range Levels {
		b.Run(level.String(), func(b *testing.B) {
			events := 0
			for i := 0; b.Loop(); i++ {
				rep, err := Run(NewPlan(uint64(i), level, Size{Nodes: 4, Jobs: 500}))
				if err != nil {
					b.Fatal(err)
				}
				events += rep.Events
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
