package shell

import "github.com/backwave/backwave/node"

// KeptAttempts returns how many Attempts the Pump keeps data for. Call it
// only inside a testing/synctest bubble after synctest.Wait, which orders
// the loop's writes before the read.
func KeptAttempts(p *Pump) int { return len(p.attempts) }

// Carry carries out a command of the Driver that is no store call, as the
// Pump's loop does.
func Carry(p *Pump, c node.Command) { p.carry(c) }
