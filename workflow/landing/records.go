package landing

import (
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/journal"
)

// The journal records of landing a promotion through a pull request.
// They live with the Lander that writes them; workflow/journal/records.go
// keeps the catalogue of the release's own records. Kinds and field
// names are stored, so they never change.

// PromotionPROpened: relcap opened (or found open) the pull request of the
// pinned branch Head into Base on the forge.
type PromotionPROpened struct {
	Release string     `json:"release"`
	Env     string     `json:"env"`
	Forge   forge.Kind `json:"forge"`
	Number  int        `json:"number"`
	URL     string     `json:"url"`
	Head    string     `json:"head"`
	Base    string     `json:"base"`
	Commit  string     `json:"commit"`
}

// PromotionPRReviewed: the forge's reviews of the pull request's head
// Commit, as relcap counted them (each login with the principal it is and
// whether it counted, and why not), whenever what counts changed.
type PromotionPRReviewed struct {
	Release  string                `json:"release"`
	Number   int                   `json:"number"`
	Commit   string                `json:"commit"`
	Reviews  []forge.ReviewVerdict `json:"reviews"`
	Counted  int                   `json:"counted"`
	Required int                   `json:"required"`
}

// PromotionPRMerged: the pull request merged at MergeCommit, the revision
// Argo CD must sync; by relcap through the forge's API (ByRelcap) or by a
// person on the forge (MergedBy), with the reviewers that counted.
type PromotionPRMerged struct {
	Release     string                `json:"release"`
	Number      int                   `json:"number"`
	URL         string                `json:"url"`
	Reviewed    string                `json:"reviewed"`
	MergeCommit string                `json:"merge_commit"`
	MergedBy    string                `json:"merged_by"`
	ByRelcap    bool                  `json:"by_relcap"`
	Reviewers   []forge.ReviewVerdict `json:"reviewers"`
}

// PromotionPRBlocked: the pull request cannot land as it is (closed
// without merge, head moved after approval, refused by the forge), with
// the next safe action.
type PromotionPRBlocked struct {
	Release    string `json:"release"`
	Number     int    `json:"number"`
	Reason     string `json:"reason"`
	NextAction string `json:"next_action"`
}

// The journal kinds, one per record type above.
const (
	KindPromotionPROpened   journal.Kind = "promotion.pr_opened"
	KindPromotionPRReviewed journal.Kind = "promotion.pr_reviewed"
	KindPromotionPRMerged   journal.Kind = "promotion.pr_merged"
	KindPromotionPRBlocked  journal.Kind = "promotion.pr_blocked"
)

// The kinds, by the name each record is stored under.
func (PromotionPROpened) JournalKind() journal.Kind   { return KindPromotionPROpened }
func (PromotionPRReviewed) JournalKind() journal.Kind { return KindPromotionPRReviewed }
func (PromotionPRMerged) JournalKind() journal.Kind   { return KindPromotionPRMerged }
func (PromotionPRBlocked) JournalKind() journal.Kind  { return KindPromotionPRBlocked }
