//go:build race

package ownership_test

// ownershipBudgetScale widens BenchmarkCheckOwnership10k's budget under the
// race detector, which slows this CPU-bound check roughly tenfold; run
// without it, the benchmark holds the figure.
const ownershipBudgetScale = 10
