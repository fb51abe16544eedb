package recommend

import "github.com/pickergpu/picker/pricing"

// The ranking's figure: what Recommend orders offers by (Rank, RankedBy), and how tables
// name and show it.

// Rank is how Recommend orders the offers that fit (--rank).
type Rank string

const (
	// RankJob (the default) ranks by the cost of the work: the job's billed dollars when
	// its size is known (Tokens, Requests x OutputTokens, Images), else the dollars per
	// unit of work (RankedBy). Offers the time model cannot time rank after every timed
	// one.
	RankJob Rank = "job"
	// RankHourly ranks by the price of an instance-hour, whatever the offer's speed.
	RankHourly Rank = "hourly"
)

// ParseRank accepts job or hourly; "" is job.
func ParseRank(v string) (Rank, error) {
	switch r := Rank(v); r {
	case "", RankJob:
		return RankJob, nil
	case RankHourly:
		return r, nil
	}
	return "", pricing.ParamErrorf(pricing.Invalid, "rank", "--rank %q: want job or hourly", v)
}

// What Recommendation.RankedBy says the offers are ordered by: the Fit field of the
// figure, so a reader of the JSON knows which one to read.
const (
	RankedByJobCost      = "est_cost_usd"            // the job's billed dollars
	RankedByMTokens      = "usd_per_m_tokens"        // training: per million trained tokens
	RankedByMOutTokens   = "usd_per_m_output_tokens" // inference: per million output tokens, prompts included
	RankedByImage        = "usd_per_image"           // image generation: per image
	RankedByPricePerHour = "price_usd_hr"            // --rank hourly
)

// work is the job's size in its unit of work (trained or generated tokens, images); 0
// when not given.
func (in *RecommendInput) work() float64 {
	if in.Model != nil && in.Model.IsImageModel() {
		return in.Images
	}
	return in.Tokens
}

// rankedBy names the figure the offers are ordered by.
func (in *RecommendInput) rankedBy() string {
	switch {
	case in.Rank == RankHourly:
		return RankedByPricePerHour
	case in.work() > 0:
		return RankedByJobCost
	case in.Model.IsImageModel():
		return RankedByImage
	case in.Job.IsTraining():
		return RankedByMTokens
	}
	return RankedByMOutTokens
}

// fieldOf turns a figure of the ranking (cand.primary) into the JSON field ranked_by
// names: per image instead of per unitScale images.
func (in *RecommendInput) fieldOf(v float64) float64 {
	if in.rankedBy() == RankedByImage {
		return v / in.unitScale()
	}
	return v
}

// unitScale is how many units of work the ranking's per-unit figure is of: a million
// tokens, or a thousand images (the table's $/1K IMG: an image costs fractions of a cent,
// and costs are compared as shown).
func (in *RecommendInput) unitScale() float64 {
	if in.Model.IsImageModel() {
		return 1e3
	}
	return 1e6
}

// RankedLabel is a table's header for the figure rankedBy names (Recommendation.RankedBy),
// as the CLI and the web page show it; "" for the price per hour, which every table shows
// anyway.
func RankedLabel(rankedBy string) string {
	switch rankedBy {
	case RankedByJobCost:
		return "JOB $"
	case RankedByMTokens:
		return "$/M TOK"
	case RankedByMOutTokens:
		return "$/M OUT"
	case RankedByImage:
		return "$/1K IMG"
	}
	return ""
}

// RankedValue is f's figure of rankedBy in the unit RankedLabel names (a cost per image
// per 1,000 images); nil when f is untimed or the ranking is by the hour.
func RankedValue(rankedBy string, f *Fit) *float64 {
	switch rankedBy {
	case RankedByJobCost:
		return f.EstCostUSD
	case RankedByMTokens:
		return f.USDPerMTokens
	case RankedByMOutTokens:
		return f.USDPerMOutTokens
	case RankedByImage:
		if f.USDPerImage != nil {
			return ptr(*f.USDPerImage * 1000)
		}
	}
	return nil
}

// RankedStepValue is a ladder step's Cost in the unit RankedLabel names.
func RankedStepValue(rankedBy string, st *LadderStep) *float64 {
	if st.Cost == nil || rankedBy == RankedByPricePerHour {
		return nil
	}
	if rankedBy == RankedByImage {
		return ptr(*st.Cost * 1000)
	}
	return st.Cost
}
