package shell

// KeptAttempts returns how many Attempts the Pump keeps data for. Call it
// only inside a testing/synctest bubble after synctest.Wait, which orders
// the loop's writes before the read.
func KeptAttempts(p *Pump) int { return len(p.attempts) }
