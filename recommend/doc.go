// Package recommend decides which offer wins: it matches a job's estimate (fit) and time
// (jobtime) against priced offers (pricing.Offer) and answers with the cheapest that fit,
// the savings ladder, the cheapest combination of techniques (the plan), multi-instance
// clusters and the nearest miss. It changes when the ranking or the ladder does.
//
// It is pure: it imports fit, jobtime, model and pricing and the standard library, and
// reads no files, environment or network (interconnect.csv is embedded data). Freshness
// of prices and what to run next are the caller's to say.
//
// The map of the package:
//
//   - recommend.go: Recommend, its input and answer, ranking by price or job cost and the
//     time-cost frontier; evaluate.go: the evaluator, which estimates each distinct
//     (GPU, count) variant once and times each offer.
//   - ladder.go, rungs.go: the savings ladder. Each rung is the job flags that ask for a
//     technique, applied through fit.JobParams (so the flags shown reproduce the rung's
//     answer); shown only when it lowers the need and the cost, else rejected with why.
//   - stack.go, exclusion.go: the GPU's software stack as a constraint (PyTorch wheels,
//     bitsandbytes, bf16, fp8, vendor) and the exclusions it causes.
//   - nodes.go: jobs across several identical instances with a cluster interconnect.
//   - shapes.go: the offer shapes the store needs to read (the fast path); group.go folds
//     offers that differ only in region; missreason.go explains the nearest miss.
package recommend
