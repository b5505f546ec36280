//go:build !race

package ownership_test

// ownershipBudgetScale is 1 without the race detector: the budget
// of BenchmarkCheckOwnership10k holds as written.
const ownershipBudgetScale = 1
