package fetchproc

import (
	"encoding/json"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Protocol is the version of the request and the frame stream. picker and picker-fetch
// from different builds that speak different versions fail with a message that says
// to install matching ones, never with a garbled stream.
const Protocol = 1

// Program is the name of the fetch program.
const Program = "picker-fetch"

// request is what picker writes to picker-fetch's stdin, as JSON: the provider's decoded
// config section and what the child needs to log as picker does.
type request struct {
	Protocol int `json:"protocol"`
	// Config is the section, in the JSON form of the adapter's Config type (both sides
	// share the type, from the adapter's light package).
	Config json.RawMessage `json:"config"`
	// Secrets are the values picker's redactor masks (config.Secrets): the child's log
	// lines pass the same redaction.
	Secrets []string `json:"secrets,omitempty"`
}

// frame is one gob value of picker-fetch's stdout: a part of the offers, or the final
// summary, or the final error. Exactly one of them is set, except that an empty part
// has none.
type frame struct {
	Offers  []pricing.Offer
	Summary *summary
	Err     *wireError
}

// summary is the rest of the Snapshot, sent once every part is.
type summary struct {
	Regions  []string
	Failed   map[string]wireError
	Warnings []string
}

// wireError is a pricing.Error across the process boundary: its code decides the exit
// code and HTTP status, Param the flag a message is about.
type wireError struct {
	Code    pricing.Code
	Message string
	Param   string
}

func toWire(err error) wireError {
	return wireError{Code: pricing.ErrorCode(err), Message: err.Error(), Param: pricing.ErrorParam(err)}
}

func (w wireError) err() error {
	code := w.Code
	if code == "" {
		code = pricing.Internal
	}
	return &pricing.Error{Code: code, Message: w.Message, Param: w.Param}
}

func (s *summary) snapshot() *providers.Snapshot {
	snap := &providers.Snapshot{Regions: s.Regions, Warnings: s.Warnings}
	if len(s.Failed) > 0 {
		snap.Failed = make(map[string]error, len(s.Failed))
		for part, e := range s.Failed {
			snap.Failed[part] = e.err()
		}
	}
	return snap
}

func summarize(snap *providers.Snapshot) *summary {
	s := &summary{Regions: snap.Regions, Warnings: snap.Warnings}
	if len(snap.Failed) > 0 {
		s.Failed = make(map[string]wireError, len(snap.Failed))
		for part, e := range snap.Failed {
			s.Failed[part] = toWire(e)
		}
	}
	return s
}
