// Package trial holds the N-1 trial: a Mixed-Version Fleet of real worker
// processes, half built from the previous release and half from this
// checkout, working one database that this checkout migrates while jobs
// are in flight. The package has no code of its own; see trial_test.go.
package trial
